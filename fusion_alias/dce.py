"""Dead-code elimination of fusible symbols whose results nobody reads."""

from __future__ import annotations

from thunder.core.proxies import Proxy
from thunder.core.pytree import tree_flatten
from thunder.core.symbol import BoundSymbol
from thunder.core.trace import TraceCtx

from fusion_alias import ops
from fusion_alias.aliasing import _ARGS, _flat, proxy_outs


_SIDE_EFFECTS = (ops.COPY_ID, ops.UPDATE_ALIASES_ID)  # (kept, whoever reads them)


def _returned_names(trace: TraceCtx) -> set[str]:
    """The names of the proxies the trace returns (needed whoever else reads them)."""
    flat_out, _ = tree_flatten(trace.output)
    return {x.name for x in flat_out if isinstance(x, Proxy)}


def _dce(bsyms: list[BoundSymbol], trace: TraceCtx) -> list[BoundSymbol]:
    """Drop fusible, side-effect-free symbols whose results nobody reads."""
    needed = _returned_names(trace)
    keep = []
    add = needed.add
    side_effects = _SIDE_EFFECTS
    # (aliasing.flattened, inlined: one cache lookup for both lists, all looked up at once, in C)
    entries = list(map(_ARGS.get, map(id, bsyms)))
    entries.reverse()
    for b, entry in zip(reversed(bsyms), entries):
        if entry is None or entry[0] is not b:
            entry = _flat(b)
        args, outs = entry[1], entry[2]
        if outs:
            for o in outs:
                if o._name in needed:  # (aliasing.py, Note [proxy names read directly])
                    break
            else:  # nobody reads it
                if ops.op_info(b) is not None and b.sym.id not in side_effects:
                    continue  # fusible and side-effect free
        keep.append(b)
        for a in args:
            add(a._name)
    keep.reverse()
    return keep


def drops_any(bsyms: list[BoundSymbol], data_u: list[int], trace: TraceCtx) -> bool:
    """Whether ``_dce(bsyms, trace)`` would drop a symbol, told from the graph's data edges
    (``data_u``: the producer of each data edge of ``bsyms``'s dependency graph).

    Note [dead code found from the graph]
    -------------------------------------
    Thunder hands over a trace it has freed of dead code, and read substitution reuses the views it
    finds (placed_symbols.py), so ``_dce`` mostly drops nothing: a walk back over every symbol
    (0.14 s of the pass on the bench's 100k-bsym ``views`` trace) to keep them all. The graph's data
    edges already say which symbols some later symbol reads: ``_dce`` drops one only if nothing
    after it reads its outputs and the trace does not return them, so the last symbol it would drop
    is among the symbols no edge leaves (every symbol after that one is kept, so none reads it).
    If none of those may be dropped (a ``copy_``, an op outside the op table, one with no output,
    one whose output the trace returns), ``_dce`` drops nothing. Example: ``t1 = exp(a); t2 =
    copy_(t1, a); t3 = mul(b, 2); return t3``: no edge leaves ``t2`` (a ``copy_``: kept) or ``t3``
    (returned), so nothing is dropped, without a walk back.
    """
    unread = set(range(len(bsyms)))
    unread.difference_update(data_u)
    if not unread:
        return False
    returned = _returned_names(trace)
    for i in unread:
        b = bsyms[i]
        outs = proxy_outs(b)
        if not outs or b.sym.id in _SIDE_EFFECTS or ops.op_info(b) is None:
            continue
        for o in outs:
            if o._name in returned:
                break
        else:
            return True
    return False
