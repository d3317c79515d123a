"""Which tensor arguments of a symbol its result's gradient goes back to, where that is not all of them.

Note [operands that give a dtype or a shape]
--------------------------------------------
Eager's ``t.type_as(h)``, ``t.to(h)``, ``t.expand_as(h)``, ``t.view_as(h)`` and ``t.reshape_as(h)`` read
only ``h``'s dtype or shape: the result requires grad when ``t`` does, whatever ``h`` requires, and no
gradient goes back to ``h``. ``torch.zeros_like(h)`` and its kin, and ``h.new_zeros(...)`` and its kin,
are factories: their result requires no grad at all. Taking every tensor argument for an operand (as
the checks of calls with gradients did) made ``torch.zeros_like(t)`` of a ``t`` that requires grad
require grad itself (an output marked so where eager's is not), and ``t.detach().type_as(h)`` carry
``h``'s gradient (a refusal saying eager raises where it does not, session 22). Worked example::

    t0 = h.amax(-1, keepdim=True)          # amax saves h
    z = torch.zeros_like(t0)               # requires no grad: amax's backward never runs through z
    h.clamp_max_(0.1)
    return z * h                           # eager runs its backward; so does fusion_alias now
"""

from __future__ import annotations

FIRST_ARGUMENT_ONLY = frozenset({"type_as", "to", "expand_as", "view_as", "reshape_as"})
# factories, and ops whose results carry no gradient (comparisons, tests, indices: a bool or integer result whose
# eager op has no derivative; not ``isfinite`` or ``isclose``, which call ``abs`` inside: saved_versions.py,
# Note [reads that ask eager's autograd nothing])
NO_GRADIENT = frozenset({"zeros_like", "ones_like", "full_like", "empty_like", "rand_like", "randn_like",
                         "randint_like", "new_zeros", "new_ones", "new_full", "new_empty", "new_tensor",
                         "gt", "lt", "ge", "le", "eq", "ne", "isnan", "isinf", "isneginf", "isposinf", "signbit",
                         "argmax", "argmin", "logical_not", "logical_and", "logical_or", "logical_xor"})


# Note [writes eager's autograd does not record]
# ----------------------------------------------
# Eager records no autograd node for ``b.logical_xor_(m)`` (and ``logical_and_``, ``logical_or_``,
# ``logical_not_``: no derivative formula, unlike ``b.eq_(0.5)``, whose gradient is zeros) nor for an
# ``out=`` of a function without a gradient (``torch.eq(b, 0.5, out=b)``; checked on torch 2.9.1: these run
# where an argument requires grad; ``heaviside`` and ``floor_divide`` run too, but eager's backward through
# their ``out`` then raises "derivative ... is not implemented": those stay refused). The tensor written
# keeps its history and takes the new values: as a write under ``no_grad`` does. fusion_alias wrote the
# values with no history (leaf gradient None for ``return b``), and refused the ``out=`` calls with the
# words eager uses for differentiable ones (session 28). Both are now writes under no_grad
# (autograd_functionalize.py, ``_explicit_writes``). Worked example, ``a`` a leaf::
#
#     b = a * 1
#     b.logical_xor_(b > 0)     # b: 0./1. values, grad_fn still MulBackward0
#     return b * a              # a.grad == b + a * 1 (the identity through the xor), eager and fusion_alias
OUT_WITHOUT_GRADIENT = frozenset({"eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor",
                                  "logical_not", "signbit", "isneginf", "isposinf"})
UNRECORDED_WRITES = frozenset({"logical_and_", "logical_or_", "logical_xor_", "logical_not_"}
                              | {f"{name}_out" for name in OUT_WITHOUT_GRADIENT})


def gradient_operands(name: str, tensor_args: list) -> list:
    """The tensors among ``tensor_args`` (a symbol's tensor arguments, in order) that a gradient of the
    symbol named ``name`` goes back to (Note [operands that give a dtype or a shape])."""
    if name in NO_GRADIENT:
        return []
    if name in FIRST_ARGUMENT_ONLY:
        return tensor_args[:1]
    return tensor_args
