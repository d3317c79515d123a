"""``prod``'s gradient as eager computes it: ``g * prod / a``, or the product of the others where any element is 0.

Note [prod's gradient, eager's two formulas]
--------------------------------------------
Eager's ``prod_backward`` picks its formula by one question about the *whole* input (every slice at once, for
``x.prod(dim)`` too): does any element equal 0? ::

    no zero:   g * (prod / a)                                  (inf / inf = NaN at an infinite element)
    a zero:    g * (prefix * suffix)    prefix: the product of the elements before a along the reduced dim,
                                        suffix: of those after it (two cumprods: prod_safe_zeros_backward)

The second is the product of all the *others*, which holds the NaN of ``0 * inf`` and of a NaN element wherever
one is among them. eager_gradients.py's rule (Note [gradients Thunder gets wrong at zero]) counted zeros per
slice, handed the zero element the product of the others and every other element of the slice 0, silently::

    x = [nan, 2., 0., 3.]
    x.prod()          # eager x.grad [0, nan, nan, nan] (0 * nan behind each but the zero); was [0, 0, nan, 0]
    x = [inf, 2., 0., 3.]
    x.prod()          # eager [0, nan, inf, nan]; was [0, 0, inf, 0]

and a slice with no zero beside one that has one took ``prod / a`` where eager takes the others' product
(``[[1, inf], [0, 2]].prod(1)``: eager ``[[inf, 1], [2, 0]]``, ``inf / inf`` = NaN before). Here both are
computed and the whole-input question selects, as eager's branch does: the reduced dims are moved last and
flattened (all dims: ``x.flatten()``, eager's order), the exclusive products are Thunder's ``cumprod`` (run by
torch) of the elements shifted by one with a 1 in front, forward and flipped, multiplied as eager multiplies
them. A 0-d input passes ``g`` on (eager's first case); a complex one keeps Thunder's rule.

Eager's all-elements ``x.prod()`` has a third case: two zeros or more give zeros (``zeros_like(input)``, whatever
``g`` and the others hold: ``[0, 0, inf, 2]`` gives ``[0, 0, 0, 0]``, where the others' products hold NaN). Thunder's
``prod`` prim tells ``x.prod()`` from ``x.prod(dim)`` only by the dims it reduces, so a reduction over every dim is
taken as ``x.prod()``, and ``x.prod(0)`` of a 1-d ``x`` that requires grad (where eager's ``prod(dim)`` gives the
others' NaN: fuzz ``ties --special-values --grad`` 50103 #39, a flattened input of rounded values, many zeros) is
traced as ``x.unsqueeze(0).prod(1).squeeze(0)``: the same value, and a prim that reduces one dim of two.
"""

from __future__ import annotations

import math

import torch
import thunder.torch as ltorch
from thunder.core import dtypes, prims
from thunder.core.proxies import TensorProxy
from thunder.core.transforms import get_grad, put_grad, restore_reduced_dims

from fusion_alias.wrapped_lookasides import wrap_lookasides


def _exclusive_products(t):
    """The product of the elements before each one along ``t``'s last dim, times those after it."""
    k = t.shape[-1]
    ones = ltorch.full((*t.shape[:-1], 1), 1.0, device=t.device, dtype=t.dtype)
    before = ltorch.cumprod(ltorch.cat([ones, t[..., : k - 1]], -1), -1)
    after = ltorch.flip(ltorch.cumprod(ltorch.cat([ones, ltorch.flip(t[..., 1:], -1)], -1), -1), -1)
    return before * after


def _products_of_the_others(a, dims):
    """For each element of ``a``, the product of the other elements of its slice over ``dims`` (module Note)."""
    reduced = sorted(d % a.ndim for d in dims)
    kept = [d for d in range(a.ndim) if d not in reduced]
    order = kept + reduced
    moved = ltorch.permute(a, order) if order != list(range(a.ndim)) else a
    lead = [a.shape[d] for d in kept]
    flat = ltorch.reshape(moved, (*lead, math.prod(a.shape[d] for d in reduced)))
    others = ltorch.reshape(_exclusive_products(flat), tuple(moved.shape))
    if moved is a:
        return others
    return ltorch.permute(others, [order.index(d) for d in range(a.ndim)])


def prod_grad(a, dims):
    result = prims.prod(a, dims)
    g = get_grad(result)
    shape = a.shape
    g_full, result_full = restore_reduced_dims(g, dims, shape), restore_reduced_dims(result, dims, shape)
    if dtypes.is_complex_dtype(a.dtype):  # (Thunder's rule: eager's conjugates, not asked for here)
        put_grad(a, g_full * result_full / a)
        return result
    if a.ndim == 0 or not dims or a.numel == 0:
        put_grad(a, g_full if a.ndim == 0 or not dims else g_full * (result_full / a))
        return result
    zeros = prims.sum(ltorch.to(ltorch.eq(a, 0), a.dtype), tuple(range(a.ndim)))  # (the whole input: eager's branch)
    safe = g_full * _products_of_the_others(a, dims)
    if len(set(d % a.ndim for d in dims)) == a.ndim:  # (all elements: two zeros or more give zeros, whatever g)
        safe = ltorch.where(ltorch.gt(zeros, 1), 0.0, safe)
    put_grad(a, ltorch.where(ltorch.gt(zeros, 0), safe, g_full * (result_full / a)))
    return result


def _dim_of_a_vector(previous):
    """``x.prod(0)`` of a 1-d ``x`` that requires grad, as a reduction of one dim of two (module Note)."""
    def traced(a, *args, **kwargs):
        from fusion_alias.zero_gradient_ops import _requiring_grad

        names = dict(zip(("dim", "keepdim"), args), **kwargs)
        if (len(args) > 2 or set(kwargs) - {"dim", "keepdim", "dtype"} or names.get("dim") not in (0, -1)
                or isinstance(names.get("dim"), bool) or not isinstance(a, TensorProxy) or a.ndim != 1
                or not dtypes.is_float_dtype(a.dtype) or dtypes.is_complex_dtype(a.dtype) or not _requiring_grad([a])):
            return previous(a, *args, **kwargs)
        rest = {k: v for k, v in names.items() if k != "dim"}
        return ltorch.squeeze(previous(ltorch.unsqueeze(a, 0), 1, **rest), 0)

    return traced


def register(executor) -> None:
    """Lend ``executor`` the lookaside of the module Note's last paragraph, over what was lent before."""
    wrap_lookasides(executor, torch.prod, _dim_of_a_vector, torch.Tensor.prod, with_symbol=True)
