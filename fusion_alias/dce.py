"""Dead-code elimination of fusible symbols whose results nobody reads."""

from __future__ import annotations

from thunder.core.proxies import Proxy
from thunder.core.pytree import tree_flatten
from thunder.core.symbol import BoundSymbol
from thunder.core.trace import TraceCtx

from fusion_alias import ops
from fusion_alias.aliasing import flattened


def _dce(bsyms: list[BoundSymbol], trace: TraceCtx) -> list[BoundSymbol]:
    """Drop fusible, side-effect-free symbols whose results nobody reads."""
    needed: set[str] = set()
    flat_out, _ = tree_flatten(trace.output)
    needed.update(x.name for x in flat_out if isinstance(x, Proxy))
    keep = []
    for b in reversed(bsyms):
        _, args, outs, _, _ = flattened(b)  # one cache lookup for both lists
        if outs and not any(o.name in needed for o in outs):
            if ops.op_info(b) is not None and not ops.is_copy(b) and not ops.is_update_aliases(b):
                continue  # fusible, side-effect free, and nobody reads it
        keep.append(b)
        needed.update(a.name for a in args)
    return list(reversed(keep))
