"""``torch.round(x, decimals=d)`` as eager computes it.

Note [round with decimals]
--------------------------
Thunder 0.2.6's ``round`` takes no ``decimals``: ``x.round(decimals=1)`` raised ``TypeError: round() got an
unexpected keyword argument 'decimals'`` (plain ``thunder.jit`` too) where eager runs it (session 41 hand probe).
Eager's kernel (``round_decimals``) computes, in the input's dtype (in float32 for float16/bfloat16, cast back
once)::

    d > 0:  nearbyint(x * 10**d) / 10**d            d < 0:  nearbyint(x / 10**-d) * 10**-d

and so does the lookaside here, for a floating ``x`` and an integer ``|d| <= 10`` (``10**d`` exact in float32);
``decimals=0`` is Thunder's ``round``. Checked against eager on 200k values per dtype and ``d``, ties and special
values included (tests/test_session41_round_decimals.py). Its gradient is round's, zeros (eager_gradients.py), as
eager's. An integer tensor (eager: "round_cpu" not implemented), a complex one or another ``d`` keeps Thunder's
error.
"""

from __future__ import annotations

import torch
import thunder.torch as ltorch
from thunder.core import dtypes
from thunder.core.proxies import TensorProxy

from fusion_alias.wrapped_lookasides import wrap_lookasides

_LOW_PRECISION = (dtypes.float16, dtypes.bfloat16)


def _rounded(a, d: int):
    x = ltorch.to(a, torch.float32) if dtypes.to_dtype(a.dtype) in _LOW_PRECISION else a
    scale = 10.0 ** abs(d)
    r = ltorch.round(x * scale) / scale if d > 0 else ltorch.round(x / scale) * scale
    return ltorch.to(r, a.dtype) if r.dtype != a.dtype else r


def _with_decimals(previous):
    def traced(a, *args, **kwargs):
        if args or set(kwargs) != {"decimals"} or not isinstance(a, TensorProxy):
            return previous(a, *args, **kwargs)
        d = kwargs["decimals"]
        if type(d) is int and d == 0:
            return previous(a)
        if type(d) is int and abs(d) <= 10 and dtypes.is_float_dtype(a.dtype):
            return _rounded(a, d)
        return previous(a, *args, **kwargs)

    return traced


def register(executor) -> None:
    """Lend ``executor`` the lookaside of Note [round with decimals], over what was lent before (identity_results')."""
    wrap_lookasides(executor, torch.round, _with_decimals, torch.Tensor.round, with_symbol=True)
