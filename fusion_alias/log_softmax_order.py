"""``log_softmax`` computed in eager's order: ``(x - max) - log(sum(exp(x - max)))``.

Note [log_softmax of a row holding +inf]
----------------------------------------
Thunder decomposes ``log_softmax(x, d)`` as ``x - logsumexp(x, d)``, and its ``logsumexp`` takes an infinite
maximum as 0 (``where(|m| == inf, 0, m)``) so that the sum stays finite. For a row holding +inf that gives ``inf``
for the ``logsumexp`` and ``x - inf``: NaN at the +inf, -inf elsewhere. Eager's kernel subtracts the row's maximum
first, ``x - inf`` is NaN at the +inf and -inf elsewhere, ``exp`` of that NaN and 0, their sum NaN: the whole row is
NaN (plain ``thunder.jit`` runs torch's kernel and is right; a fusion region computed Thunder's decomposition)::

    torch.tensor([inf, 1., 0.]).log_softmax(0)   # eager: [nan, nan, nan]; was: [nan, -inf, -inf]

Here a floating ``log_softmax`` over a dim (its input converted first to a ``dtype`` asked for) is one composite symbol named ``log_softmax`` (what
reads the trace by name sees it: refusals/saved_versions.py, eager_result_layouts.py) whose ops are eager's order,
in float32 for half-precision inputs: the maximum (detached: the result does not depend on it, and eager's
gradient is ``g - softmax * sum(g)``, which the rest gives), the shift, ``exp``, the sum, its ``log``, the
difference. For finite rows it is the same value, rounded as eager rounds it.
"""

from __future__ import annotations

import torch
import thunder.torch as ltorch
from thunder.core import dtypes
from thunder.core.langctxs import Languages, langctx
from thunder.core.proxies import TensorProxy
from thunder.core.symbol import Symbol

from fusion_alias.no_grad_writes import detached_view
from fusion_alias.wrapped_lookasides import wrap_lookasides


def _meta(x, dim):
    wide = x if x.dtype in (dtypes.float32, dtypes.float64) else ltorch.to(x, torch.float32)
    shifted = wide - detached_view(ltorch.amax(wide, dim, True))
    out = shifted - ltorch.log(ltorch.sum(ltorch.exp(shifted), dim, True))
    return ltorch.to(out, x.dtype)


_LOG_SOFTMAX = Symbol(name="log_softmax", meta=langctx(Languages.TORCH)(_meta), id="fusion_alias.log_softmax")


def _in_eager_order(previous):
    def traced(*args, **kwargs):
        x = args[0] if args else kwargs.get("input")
        dim = args[1] if len(args) > 1 else kwargs.get("dim")
        dtype = kwargs.get("dtype")
        extra = [k for k, v in kwargs.items() if k not in ("input", "dim", "_stacklevel", "dtype") and v is not None]
        if (len(args) > 3 or extra or not isinstance(x, TensorProxy) or not isinstance(dim, int) or x.ndim == 0
                or not dtypes.is_float_dtype(x.dtype) or x.numel == 0
                or (len(args) == 3 and not isinstance(args[2], int))
                or (dtype is not None and not (isinstance(dtype, torch.dtype) and dtype.is_floating_point))):
            return previous(*args, **kwargs)
        previous(*args, **kwargs)  # (its checks: a dim out of range raises as before; the value is dropped)
        return _LOG_SOFTMAX(ltorch.to(x, dtype) if dtype is not None else x, dim)

    return traced


def register(executor) -> None:
    """Lend ``executor`` the lookasides of the module Note, over what was lent before."""
    wrap_lookasides(executor, torch.log_softmax, _in_eager_order, torch.nn.functional.log_softmax,
                    torch.Tensor.log_softmax, with_symbol=True)
