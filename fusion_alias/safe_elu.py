"""``elu``, ``selu`` and ``celu`` of large and NaN inputs, with eager's gradient.

Note [elu where expm1 overflows]
--------------------------------
Thunder 0.2.6 computes ``elu(a)`` as ``where(a > 0, a, alpha * expm1(a))``: both branches for every
element. Where ``a`` is large (``a > 88.72`` in float32), ``expm1(a)`` is ``inf``; the value is ``a``,
as eager's, but the gradient of the branch not taken is ``0 * exp(a) = 0 * inf = NaN``, and the sum
of both branches' gradients is NaN where eager's is the upstream gradient, silently (plain
``thunder.jit`` too). At a NaN input eager takes the positive branch (its kernel tests ``x <= 0``),
so its gradient is the upstream gradient there, Thunder's NaN::

    a = torch.tensor([100.0, -1.0], requires_grad=True)
    F.elu(a).sum().backward()        # eager a.grad [1, 0.37]; Thunder [nan, 0.37]

Here the negative branch only ever sees values that are not positive, and the test is eager's::

    elu(a) = where(a <= 0, alpha * expm1(where(a <= 0, a, 0)), a)

so every value is eager's and no gradient meets an infinity. ``selu`` is ``scale`` times that with
its fixed ``alpha``; ``celu`` divides by ``alpha`` inside ``expm1``. ``F.elu``, ``F.selu``,
``F.celu``, ``torch.selu``, ``torch.celu``, their ``inplace=True`` forms, ``F.elu_``, ``torch.selu_``
and ``torch.celu_`` are traced so; an input that is not floating is Thunder's own.
"""

from __future__ import annotations

import torch
from thunder.core.langctxs import Languages, langctx
from thunder.core.symbol import Symbol
import thunder.torch as ltorch

from fusion_alias.saturated_sigmoid import _REAL  # (the floating dtypes these lookasides trace)
from fusion_alias.wrapped_lookasides import wrap_lookasides

_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def _negative_branch(a, alpha, input_scale: float = 1.0):
    """``alpha * expm1(a * input_scale)`` where ``a <= 0``, ``a`` itself elsewhere (Note [elu where expm1 overflows])."""
    negative = ltorch.le(a, 0)
    x = ltorch.where(negative, a, 0)
    x = x if input_scale == 1.0 else ltorch.mul(x, input_scale)
    return ltorch.where(negative, ltorch.mul(alpha, ltorch.expm1(x)), a)


def _stored(a, out, inplace: bool):
    return ltorch._copy_(a, out) if inplace else out


def _elu(a, alpha=1.0, inplace: bool = False):
    return _stored(a, _negative_branch(a, alpha), inplace)


def _selu(a, inplace: bool = False):
    return _stored(a, ltorch.mul(_negative_branch(a, _SELU_ALPHA), _SELU_SCALE), inplace)


def _celu(a, alpha=1.0, inplace: bool = False):
    return _stored(a, _negative_branch(a, alpha, 1.0 / alpha), inplace)


elu = Symbol(name="elu", meta=langctx(Languages.TORCH)(_elu), id="fusion_alias.elu")
selu = Symbol(name="selu", meta=langctx(Languages.TORCH)(_selu), id="fusion_alias.selu")
celu = Symbol(name="celu", meta=langctx(Languages.TORCH)(_celu), id="fusion_alias.celu")


def takes(a) -> bool:
    """Whether ``a`` is traced by these symbols (a floating tensor)."""
    return getattr(a, "dtype", None) in _REAL


def _lookaside(symbol, inplace: bool = False):
    def wrap(previous):
        def traced(a, *args, **kwargs):
            if not takes(a):
                return previous(a, *args, **kwargs)
            if inplace:
                return symbol(a, *args, **kwargs, inplace=True)
            return symbol(a, *args, **kwargs)

        return traced

    return wrap


def register(executor) -> None:
    """Lend ``executor`` the lookasides of Note [elu where expm1 overflows] (after inplace_lookasides.py's
    ``F.elu_``, which it wraps)."""
    F = torch.nn.functional
    wrap_lookasides(executor, F.elu, _lookaside(elu), with_symbol=True)
    wrap_lookasides(executor, F.selu, _lookaside(selu), torch.selu, with_symbol=True)
    wrap_lookasides(executor, F.celu, _lookaside(celu), torch.celu, with_symbol=True)
    executor._lookasides[F.elu_] = _lookaside(elu, inplace=True)(executor._lookasides[F.elu_])
    # torch.selu_ and torch.celu_: Thunder 0.2.6 has no symbol for them; what is not floating is the out-of-place
    # symbol's, in place (eager_kernels.py asks eager whether it has a kernel)
    executor._lookasides[torch.selu_] = _lookaside(selu, inplace=True)(lambda a: ltorch.selu(a, True))
    executor._lookasides[torch.celu_] = _lookaside(celu, inplace=True)(
        lambda a, alpha=1.0: ltorch.celu(a, alpha, True))
