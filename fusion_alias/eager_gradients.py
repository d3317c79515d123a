"""Gradient rules Thunder 0.2.6 lacks or gets wrong at special values, eager's, lent to its autodiff by
fusion_alias's executor.

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

Note [gradients Thunder gets wrong at zero]
-------------------------------------------
Two of Thunder's rules divide or multiply by an infinity where eager's formula has a special case,
and hand back NaN, silently (plain ``thunder.jit`` too)::

    pow(a, b)      Thunder: g * b * a ** (b - 1)    at a = 0, b = 0: 0 * inf = NaN    eager: 0
                   Thunder: g * a ** b * log(a)     at a = 0, b >= 0 (b's gradient): NaN   eager: 0
    prod(a, dims)  Thunder: g * prod / a            at a = 0: 0 / 0 = NaN
                   eager: the product of the others (one zero in the slice), 0 (two or more)

e.g. ``w.pow(0)`` of ``w = [0., 2.]`` has gradient ``[0., 0.]`` in eager and ``[nan, 0.]`` in
Thunder; ``w.prod()`` of ``w = [0., 2., 3.]`` has ``[6., 0., 0.]`` in eager and ``[nan, 0., 0.]``
in Thunder. The rules here are eager's (``pow_backward_self``, ``pow_backward_exponent``,
``prod_backward``), with its values where no special case applies (``g * (prod / a)``). ``prod``'s rule is
prod_gradient.py's (Note [prod's gradient, eager's two formulas]: the others' product, NaN and all).

Note [a 0-d operand's gradient, summed]
---------------------------------------
Thunder's elementwise prims take a 0-d tensor beside a tensor of any shape without broadcasting it
(``b * c`` of a 0-d ``b`` and a ``(3,)`` ``c`` is ``prims.mul(b, c)``), and Thunder's rules put ``g * c``,
of shape ``(3,)``, as ``b``'s gradient: PyTorch's autograd sums it to ``b``'s shape at the boundary. But
where ``b`` has a second use whose gradient is 0-d, the two are added first, and the 0-d one is
broadcast, then summed with the rest: counted once per element. Silently (plain ``thunder.jit`` too)::

    def f(b, c):                    # b 0-d (a learnt scale or temperature), c of shape (3,)
        return b * 1, b * c         # Thunder's b.grad: g0 * 3 + sum(g1 * c); eager's: g0 + sum(g1 * c)

The rules here (and those of ``add``, ``sub``, ``mul``, ``div``, ``where``, ``maximum``, ``atan2``,
``fmod``, eager's formulas, as Thunder's) sum a 0-d operand's gradient to 0-d where they put it. Thunder also refused
nothing here: the same sum for a 0-d *intermediate* was caught only where its wrong shape reached a
region (region_plan.py's ``TraceShapeError``).

A number divided by a tensor (``2.5 % r``) is eager's ``remainder.Scalar_Tensor``, which has no
derivative: eager's backward raises "derivative for aten::remainder is not implemented" when ``r``
requires grad. That is refused here, with eager's words, when the call is traced.
"""

from __future__ import annotations

import math

from thunder.core import prims
from thunder.core.proxies import TensorProxy
from thunder.core import dtypes
from thunder.core.transforms import get_grad, put_grad
import thunder.torch as ltorch

from fusion_alias.prod_gradient import prod_grad


def _put(x, g) -> None:
    """``put_grad(x, g)``, ``g`` summed to ``x``'s shape where ``x`` is a 0-d tensor and ``g`` is not
    (Note [a 0-d operand's gradient, summed])."""
    if not isinstance(x, TensorProxy):
        return
    if x.ndim == 0 and g.ndim > 0:
        g = prims.sum(g, tuple(range(g.ndim)))
    put_grad(x, g)


def add_grad(a, b):
    result = prims.add(a, b)
    g = get_grad(result)
    _put(a, g)
    _put(b, g)
    return result


def sub_grad(a, b):
    result = prims.sub(a, b)
    g = get_grad(result)
    _put(a, g)
    _put(b, prims.neg(g))
    return result


def _conj(x):
    """``x``'s complex conjugate where it is complex, else ``x`` (Note [a complex product's gradient conjugates])."""
    if isinstance(x, TensorProxy):
        return ltorch.conj_physical(x) if dtypes.is_complex_dtype(x.dtype) else x
    return x.conjugate() if isinstance(x, complex) else x


def mul_grad(a, b):
    result = prims.mul(a, b)
    g = get_grad(result)
    _put(a, _conj(b) * g)
    _put(b, _conj(a) * g)
    return result


def div_grad(a, b):
    result = prims.div(a, b)
    g = get_grad(result)
    _put(a, g / _conj(b))
    _put(b, -g * _conj((a / b) / b))
    return result


def where_grad(pred, a, b):
    result = prims.where(pred, a, b)
    g = get_grad(result)
    _put(a, ltorch.where(pred, g, 0))
    _put(b, ltorch.where(pred, 0, g))
    return result


def _chosen(prim, loses, a, b):
    """``maximum`` (``loses``: ``lt``) or ``minimum`` (``gt``): the gradient to the operand chosen, halved at a tie
    (a NaN compares unequal: the whole ``g``, as eager)."""
    result = prim(a, b)
    g = get_grad(result)
    shared = prims.where(a == b, g / 2, g)
    _put(a, prims.where(loses(a, b), 0.0, shared))
    _put(b, prims.where(loses(b, a), 0.0, shared))
    return result


def maximum_grad(a, b):
    return _chosen(prims.maximum, prims.lt, a, b)


def minimum_grad(a, b):
    return _chosen(prims.minimum, prims.gt, a, b)


def atan2_grad(a, b):
    result = prims.atan2(a, b)
    g = get_grad(result)
    scale = prims.reciprocal(a * a + b * b)
    _put(a, g * b * scale)
    _put(b, g * -a * scale)
    return result


def fmod_grad(a, b):
    result = prims.fmod(a, b)
    g = get_grad(result)
    _put(a, g)
    _put(b, -g * prims.trunc(a / b))
    return result


def remainder_grad(a, b):
    result = prims.remainder(a, b)
    g = get_grad(result)
    _put(a, g)
    if isinstance(b, TensorProxy):
        if not isinstance(a, TensorProxy) and b.requires_grad:
            raise NotImplementedError("derivative for aten::remainder is not implemented (eager PyTorch raises this "
                                      "at backward for a number % a tensor that requires grad)")
        _put(b, -g * ltorch.floor_divide(a, b))
    return result


def lerp_grad(start, end, weight):
    result = prims.lerp(start, end, weight)
    g = get_grad(result)
    _put(start, g * (1 - weight))
    _put(end, g * weight)
    _put(weight, g * (end - start))
    return result


def pow_grad(a, b):
    result = prims.pow(a, b)
    g = get_grad(result)
    if isinstance(a, TensorProxy):
        if isinstance(b, TensorProxy):
            _put(a, prims.where(b == 0, 0.0, g * b * prims.pow(a, b - 1)))
        elif b == 0:
            _put(a, _zeros_from(g))
        else:
            _put(a, g * b * prims.pow(a, b - 1))
    if isinstance(b, TensorProxy):
        at_zero = (a == 0) & (b >= 0) if isinstance(a, TensorProxy) else (b >= 0 if a == 0 else None)
        spread = g * result * ltorch.log(a) if isinstance(a, TensorProxy) else g * result * math.log(a) if a > 0 \
            else g * result * ltorch.log(ltorch.full_like(b, a))
        _put(b, spread if at_zero is None else prims.where(at_zero, 0.0, spread))
    return result


def _zeros_from(g):
    """Note [a zero gradient made in backward]
    ------------------------------------------
    Zeros of ``g``'s shape and dtype, computed from ``g`` (a ``where`` whose branches are both 0, so an
    infinite or NaN ``g`` still gives 0). Thunder's split of the joint trace puts a value that depends on no
    gradient into the forward, and does not save it for the backward: ``zeros_like(a)`` (a ``full``) as the
    gradient of ``a.pow(0)``, the only use of ``a``, failed in backward with "NameError: name 't3' is not
    defined" (fuzz ``ties`` generator, seed 50001 #18)."""
    return ltorch.to(ltorch.where(ltorch.ne(g, g), 0.0, 0.0), g.dtype)


# Note [a zero gradient, not g * 0]
# ---------------------------------
# Thunder's rule for ``sign`` is ``g * 0``: a NaN or infinite ``g`` gives NaN where eager's ``SignBackward0``
# gives zeros. ``x.sign() * x`` hands ``sign`` the cotangent ``g * x``, NaN where ``x`` is NaN or infinite, so
# ``x.grad`` was NaN there where eager's is ``g * sign(x)``: 1 at inf, 0 at NaN (session 42 sweep of the
# neighbours of ``0 * inf``; plain ``thunder.jit`` too). Its rule here is zeros made from ``g``, as round's.
def _zero_gradient(prim):
    def grad(a):
        result = prim(a)
        put_grad(a, _zeros_from(get_grad(result)))
        return result

    grad.__name__ = f"{prim.name}_grad"
    return grad


def isfinite_grad(a):
    return prims.isfinite(a)  # (a bool result carries no gradient; nothing is put back)


GRAD_TRANSFORMS = {
    prims.PrimIDs.ADD: add_grad,
    prims.PrimIDs.SUB: sub_grad,
    prims.PrimIDs.MUL: mul_grad,
    prims.PrimIDs.DIV: div_grad,
    prims.PrimIDs.WHERE: where_grad,
    prims.PrimIDs.MAXIMUM: maximum_grad,
    prims.PrimIDs.ATAN2: atan2_grad,
    prims.PrimIDs.FMOD: fmod_grad,
    prims.PrimIDs.REMAINDER: remainder_grad,
    prims.PrimIDs.LERP: lerp_grad,
    prims.PrimIDs.MINIMUM: minimum_grad,
    prims.PrimIDs.ROUND: _zero_gradient(prims.round),
    prims.PrimIDs.TRUNC: _zero_gradient(prims.trunc),
    prims.PrimIDs.SIGN: _zero_gradient(prims.sign),  # (Note [a zero gradient, not g * 0])
    prims.PrimIDs.ISFINITE: isfinite_grad,
    prims.PrimIDs.POW: pow_grad,
    prims.PrimIDs.PROD: prod_grad,
}
