"""Eager's argument checks of the dropout functions (and of ``rrelu``), made before fusion_alias's lookasides decide
anything.

Note [a dropout's arguments are checked before the shortcut]
    ``F.dropout``, ``F.alpha_dropout``, ``F.feature_alpha_dropout`` and ``F.dropout1d/2d/3d`` check their
    probability first (``p < 0 or p > 1``: ValueError "dropout probability has to be between 0 and 1, but got
    1.5"), whatever ``training`` and ``inplace`` are, and ``F.dropout1d`` then checks its input's rank (2-D or
    3-D, RuntimeError). Only after that does eager decide that an evaluation-mode or ``p == 0`` call returns
    its input. fusion_alias's lookasides (inplace_lookasides.py: ``_dropout``, ``_feature_dropout``) took that
    shortcut first, and ``_dropout`` handed Thunder's ``ltorch.dropout`` the evaluation-mode call, which returns
    its input without a check, so (session 36 hand probe; plain ``thunder.jit`` raises eager's error in all)::

        def f(x):
            F.dropout(x, 1.5, training=False)            # eager: ValueError
            F.dropout2d(x, -0.5, training=False, inplace=True)
            F.dropout1d(torch.ones(6), 0.0, inplace=True) # eager: RuntimeError (a 1-D input)
            return x

    ran and returned ``x``, missed rejections. Each lookaside now calls ``check`` first, so the call raises
    eager's error with eager's message. A probability that is a proxy (a number Thunder traces as an input) is
    not compared: its value is not known while tracing, and Thunder's own decompositions check it where they
    run.
"""

from __future__ import annotations

from numbers import Number

import torch
from thunder.core.dtypes import to_torch_dtype
from thunder.core.proxies import TensorProxy


def check(name: str, a, p) -> None:
    """Raise eager's error where ``F.<name>(a, p, ...)`` raises one before looking at ``training``/``inplace``."""
    if isinstance(p, Number) and not isinstance(p, complex) and (p < 0.0 or p > 1.0):
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if name == "dropout1d" and a.ndim not in (2, 3):
        raise RuntimeError(
            f"dropout1d: Expected 2D or 3D input, but received a {a.ndim}D input. Note that dropout1d exists to "
            "provide channel-wise dropout on inputs with 1 spatial dimension, a channel dimension, and an optional "
            "batch dimension (i.e. 2D or 3D inputs).")


# Note [rrelu's arguments, checked as eager checks them]
#     ``F.rrelu``/``F.rrelu_``/``torch.rrelu``/``torch.rrelu_`` check that ``lower <= upper`` (RuntimeError "Lower
#     bound should be less than or equal to the upper bound", also for a NaN bound) and have kernels for floating
#     dtypes only (evaluation mode runs ``leaky_relu``: '"leaky_relu_cpu" not implemented for 'Long''). Thunder's
#     ``rrelu`` in evaluation mode is a ``leaky_relu`` of slope ``(lower + upper) / 2`` with neither check, and
#     eager_kernels.py does not ask eager about an op that may draw random numbers, so (session 36 hand probe;
#     plain ``thunder.jit`` raises eager's errors)::
#
#         F.rrelu(x, 0.5, 0.1, training=False)              # eager: RuntimeError; ran
#         F.rrelu(x.long(), training=False, inplace=True)   # eager: NotImplementedError; ran
#
#     ``register`` lends lookasides that raise eager's error first, then trace as before.
_DTYPE_NAMES = {torch.int64: "Long", torch.int32: "Int", torch.int16: "Short", torch.int8: "Char", torch.uint8: "Byte",
                torch.bool: "Bool", torch.complex64: "ComplexFloat", torch.complex128: "ComplexDouble",
                torch.complex32: "ComplexHalf"}


def check_rrelu(a, lower, upper, training) -> None:
    """Raise eager's error where ``F.rrelu(a, lower, upper, training)`` raises one (Note above)."""
    numbers = [v for v in (lower, upper) if isinstance(v, Number) and not isinstance(v, complex)]
    if len(numbers) == 2 and not lower <= upper:
        raise RuntimeError("Lower bound should be less than or equal to the upper bound")
    name = _DTYPE_NAMES.get(to_torch_dtype(a.dtype)) if isinstance(a, TensorProxy) else None
    if name is not None:
        kernel = "rrelu_with_noise_out_cpu" if training is True else "leaky_relu_cpu"
        raise NotImplementedError(f'"{kernel}" not implemented for \'{name}\' (eager PyTorch rejects this too)')


def _rrelu(previous):
    def traced(a, lower=1.0 / 8, upper=1.0 / 3, training=False, *rest, **kwargs):
        check_rrelu(a, lower, upper, training)
        return previous(a, lower, upper, training, *rest, **kwargs)

    return traced


def register(executor) -> None:
    """Lend rrelu's checks (Note [rrelu's arguments, checked as eager checks them])."""
    from fusion_alias.wrapped_lookasides import wrap_lookasides

    wrap_lookasides(executor, torch.nn.functional.rrelu, _rrelu, torch.rrelu)
    wrap_lookasides(executor, torch.nn.functional.rrelu_, _rrelu, torch.rrelu_)
