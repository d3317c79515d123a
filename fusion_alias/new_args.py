"""A bound symbol copied with new arguments, its flattened lists (``aliasing.flattened``) made on the way.

Read substitution (``functionalize.py``) rewrites the reads of tens of thousands of bound symbols of
a large trace; this is what each rewritten read costs.
"""

from __future__ import annotations

import dataclasses

from thunder.core.proxies import TensorProxy
from thunder.core.symbol import BoundSymbol

from fusion_alias.aliasing import _ARGS, _arg_proxies, _proxies, flattened


# Note [a bound symbol copied with new arguments]
# ------------------------------------------------
# ``BoundSymbol.from_bsym(args=a)`` builds a dict of the 13 fields it copies, updates it and calls
# the dataclass ``__init__`` with it: about half of what read substitution pays per rewritten read.
# ``_copy_with_args`` calls ``__init__`` with the same values as arguments (``tags`` copied, the
# symbol's ``_bind_postprocess`` run, as ``from_bsym`` does). It does so only while ``BoundSymbol``'s
# fields are the ones it knows, in that order; if a Thunder version adds or reorders one, it goes
# back to ``from_bsym``.
_BSYM_FIELDS = (
    "sym", "args", "kwargs", "output", "subsymbols", "header", "source_filename", "source_positions",
    "tags", "_call_ctx", "_import_ctx", "_object_ctx", "_executor", "_line_no",
)
_FIELDS_KNOWN = tuple(f.name for f in dataclasses.fields(BoundSymbol)) == _BSYM_FIELDS


def _copy_with_args(bsym: BoundSymbol, args: tuple) -> BoundSymbol:
    """``bsym.from_bsym(args=args)`` (Note [a bound symbol copied with new arguments])."""
    if not _FIELDS_KNOWN:
        return bsym.from_bsym(args=args)
    return _copied(bsym, args, bsym.output, bsym.subsymbols)


def replayed(bsym: BoundSymbol, args: tuple, output) -> BoundSymbol:
    """``bsym.from_bsym(args=args, output=output, subsymbols=[])``: the same op on other values,
    as read substitution replays views and pushes ops down (Note [a bound symbol copied with new
    arguments])."""
    if not _FIELDS_KNOWN:
        return bsym.from_bsym(args=args, output=output, subsymbols=[])
    return _copied(bsym, args, output, [])


def _copied(bsym: BoundSymbol, args: tuple, output, subsymbols) -> BoundSymbol:
    sym = bsym.sym
    new = BoundSymbol(
        sym, args, bsym.kwargs, output, subsymbols, bsym.header, bsym.source_filename,
        bsym.source_positions, bsym.tags.copy(), bsym._call_ctx, bsym._import_ctx, bsym._object_ctx,
        bsym._executor,
    )
    if sym._bind_postprocess:
        sym._bind_postprocess(new)
    return new


def with_new_args(bsym: BoundSymbol, args: tuple) -> BoundSymbol:
    """``bsym.from_bsym(args=args)``, flattened on the way from what ``bsym``'s entry holds.

    The copy keeps ``bsym``'s output and kwargs, so only the new arguments are
    walked (read substitution rewrites tens of thousands of bsyms on a large trace).
    """
    new = _copy_with_args(bsym, args)
    _, _, outs, _, t_outs = flattened(bsym)
    if new.output is not bsym.output or new.kwargs is not bsym.kwargs:  # (from_bsym copies none today)
        return new
    flat_args = []
    only_tensors = _arg_proxies(args, flat_args)  # (as in ``_flat``)
    if new.kwargs:
        n = len(flat_args)
        _proxies(new.kwargs, flat_args)
        only_tensors = only_tensors and len(flat_args) == n
    t_args = flat_args if only_tensors else [a for a in flat_args if isinstance(a, TensorProxy)]
    _ARGS[id(new)] = (new, flat_args, outs, t_args, t_outs)
    return new
