"""Gradient rules Thunder 0.2.6 lacks, lent to its autodiff by fusion_alias's executor.

Note [gradients Thunder lacks, eager's formulas]
------------------------------------------------
Thunder 0.2.6's autodiff asks a gradient rule of every symbol of a call that computes gradients
whose operands need one, and has none for ``prims.remainder``, ``lerp``, ``minimum``, ``round``,
``trunc`` and ``isfinite``: ``torch.minimum(w, r)``, ``torch.lerp(w, r, 0.3)``, ``w % 2``,
``w.round()`` or ``torch.where(w.isfinite(), w, 0)`` in a training step failed with "Failed to find
a gradient transform for bound symbol ... prims.minimum" (plain ``thunder.jit`` too). Each rule here
is eager's (``derivatives.yaml``)::

    remainder(a, b)    a: g                        b: -g * floor_divide(a, b)
    lerp(a, b, w)      a: g * (1 - w)              b: g * w        w (a tensor): g * (b - a)
    minimum(a, b)      a: g where a < b, g / 2 where a == b, else 0 (b: the same, mirrored)
    round, trunc       a: zeros                    isfinite: no gradient (a bool result)

e.g. ``minimum(2.0, 2.0)`` hands each operand half of ``g``, as eager does (and as Thunder's own
``maximum`` rule does). They are the executor's grad transforms for the prims
(``ImplInfo.grad_transform``, asked before Thunder's own table), so only programs run with
``fusion_alias.executor`` see them: plain ``thunder.jit`` is left as it is.

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


def lerp_grad(start, end, weight):
    result = prims.lerp(start, end, weight)
    g = get_grad(result)
    put_grad(start, g * (1 - weight))
    put_grad(end, g * weight)
    if isinstance(weight, TensorProxy):
        put_grad(weight, g * (end - start))
    return result


def minimum_grad(a, b):
    result = prims.minimum(a, b)
    g = get_grad(result)
    shared = prims.where(a == b, g / 2, g)  # (a NaN compares unequal: the whole g, as eager)
    if isinstance(a, TensorProxy):
        put_grad(a, prims.where(a > b, 0.0, shared))
    if isinstance(b, TensorProxy):
        put_grad(b, prims.where(b > a, 0.0, shared))
    return result


def _zero_gradient(prim):
    def grad(a):
        result = prim(a)
        put_grad(a, ltorch.zeros_like(a))
        return result

    grad.__name__ = f"{prim.name}_grad"
    return grad


def isfinite_grad(a):
    return prims.isfinite(a)  # (a bool result carries no gradient; nothing is put back)


GRAD_TRANSFORMS = {
    prims.PrimIDs.REMAINDER: remainder_grad,
    prims.PrimIDs.LERP: lerp_grad,
    prims.PrimIDs.MINIMUM: minimum_grad,
    prims.PrimIDs.ROUND: _zero_gradient(prims.round),
    prims.PrimIDs.TRUNC: _zero_gradient(prims.trunc),
    prims.PrimIDs.ISFINITE: isfinite_grad,
}
