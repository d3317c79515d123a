"""Dead-code elimination of fusible symbols whose results nobody reads."""

from __future__ import annotations

from thunder.core.proxies import Proxy
from thunder.core.pytree import tree_flatten
from thunder.core.symbol import BoundSymbol
from thunder.core.trace import TraceCtx

from fusion_alias import ops
from fusion_alias.aliasing import _ARGS, _flat


def _dce(bsyms: list[BoundSymbol], trace: TraceCtx) -> list[BoundSymbol]:
    """Drop fusible, side-effect-free symbols whose results nobody reads."""
    needed: set[str] = set()
    flat_out, _ = tree_flatten(trace.output)
    needed.update(x.name for x in flat_out if isinstance(x, Proxy))
    keep = []
    add = needed.add
    side_effects = (ops.COPY_ID, ops.UPDATE_ALIASES_ID)
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
