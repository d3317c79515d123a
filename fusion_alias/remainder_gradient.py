"""The gradient of ``prims.remainder``, which Thunder 0.2.6 lacks.

Note [remainder's gradient, eager's formula]
--------------------------------------------
Thunder 0.2.6 has no gradient rule for ``prims.remainder``, and its autodiff asks one of every
symbol of a call that computes gradients, even of a value that needs none: ``idx % period`` in a
training step failed with "Failed to find a gradient transform for bound symbol ...
prims.remainder". Eager's derivative (``derivatives.yaml``) is::

    remainder(a, b):  a: grad        b: -grad * a.div(b, rounding_mode="floor")

e.g. ``a = 5.5``, ``b = 2.0``: ``a % b = 1.5``, and moving ``b`` by ``e`` moves the result by
``-2e`` (``floor(5.5 / 2) = 2``). The rule is lent to Thunder's autodiff as the executor's grad
transform for the symbol (``ImplInfo.grad_transform``, asked before Thunder's own table), so only
programs run with ``fusion_alias.executor`` see it: plain ``thunder.jit`` is left as it is.

A number divided by a tensor (``2.5 % r``) is eager's ``remainder.Scalar_Tensor``, which has no
derivative: eager's backward raises "derivative for aten::remainder is not implemented" when ``r``
requires grad. That is refused here, with eager's words, when the call is traced.
"""

from __future__ import annotations

from thunder.core import prims
from thunder.core.proxies import TensorProxy
from thunder.core.transforms import get_grad, put_grad
import thunder.torch as ltorch


def remainder_grad(a, b):
    """Grad transform of ``prims.remainder(a, b)`` (Note [remainder's gradient, eager's formula])."""
    result = prims.remainder(a, b)
    g = get_grad(result)
    if isinstance(a, TensorProxy):
        put_grad(a, g)
    if isinstance(b, TensorProxy):
        if not isinstance(a, TensorProxy) and b.requires_grad:
            raise NotImplementedError("derivative for aten::remainder is not implemented (eager PyTorch raises this "
                                      "at backward for a number % a tensor that requires grad)")
        put_grad(b, -g * ltorch.floor_divide(a, b))
    return result
