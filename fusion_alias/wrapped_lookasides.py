"""Lending a lookaside that wraps what traced a torch function before: Thunder's symbol, or a lookaside lent
earlier (``out=``, out_arguments.py). One helper for the modules that change how one torch function traces
(clamp_ties, saturated_sigmoid, lerp_shapes, pool_ties, zero_norms, loss_defaults, the feature dropouts)."""

from __future__ import annotations

import thunder.torch as ltorch


def wrap_lookasides(executor, fn, wrap, *also, with_symbol: bool = False) -> None:
    """``executor._lookasides[key] = wrap(previous)`` for ``fn``, each of ``also`` and, with ``with_symbol``,
    Thunder's symbol for ``fn`` (what a tensor's method resolves to), ``previous`` being the lookaside lent
    before for that key or else Thunder's symbol. Nothing where Thunder has no symbol for ``fn``."""
    original = ltorch._torch_to_thunder_function_map.get(fn)
    if original is None:
        return
    for key in (fn, *also, original) if with_symbol else (fn, *also):
        executor._lookasides[key] = wrap(executor._lookasides.get(key, original))
