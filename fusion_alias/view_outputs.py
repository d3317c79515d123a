"""Outputs that are views of an argument, in a call that computes gradients, made as views outside Thunder's Function.

Note [an output view of an argument, written in place later]
    In a call that computes gradients, Thunder returns the outputs through a ``torch.autograd.Function``.
    An output that shares memory with an argument (``return a.t()``) is then a view created in a custom
    Function, and PyTorch refuses an in-place op on it ("Output 0 of ThunderFunctionBackward is a view
    and is being modified inplace"), where eager's ``a.t()`` is a view of ``a`` that may be written (its
    write reaching ``a``'s history). Under ``torch.compile`` a program needs no such write of its own to
    meet this: ThunderFX cuts the graph at an op Thunder does not trace (fuzz seed 20737 #12, ``--grad``:
    ``t0 = a.t(); t1 = t0.sort(-2)[0]; t0.add_(t0.roll(1, -2))``, cut at ``roll``), so one fusion_alias
    piece returns the view ``t0`` and the next writes into it.

    Such an output is remade after the call as ``arg.as_strided(size, stride, storage_offset)`` of the
    argument it shares memory with: the same elements, and a real view of ``arg`` (after the call's
    writes into ``arg`` were copied back), so its gradient flows to ``arg`` as eager's view's does and a
    later in-place op on it is a write into ``arg``, as in eager. An output is remade only where it is
    a view the Function made (its ``_base`` set, its ``grad_fn`` a custom Function's), shares its storage
    with an argument tensor of its own dtype that requires grad, and is neither a conjugate nor a
    negative view; outputs nested in a container are left as they are (a ThunderFX piece returns a flat
    tuple).
"""

from __future__ import annotations

import torch


def _custom_function_view(t) -> bool:
    return (isinstance(t, torch.Tensor) and t._base is not None and t.requires_grad
            and isinstance(t.grad_fn, torch.autograd.function.BackwardCFunction)
            and not t.is_conj() and not t.is_neg())


def _remade(t: torch.Tensor, args_by_storage: dict) -> torch.Tensor:
    arg = args_by_storage.get((t.untyped_storage().data_ptr(), t.dtype, t.device))
    if arg is None or not arg.requires_grad:
        return t
    return arg.as_strided(t.size(), t.stride(), t.storage_offset())


def argument_views_outside_function(result, flat_args):
    """``result`` with each output that is a custom Function's view of an argument remade as a view of
    that argument (Note [an output view of an argument, written in place later])."""
    outs = result if type(result) in (tuple, list) else (result,)
    if not any(_custom_function_view(o) for o in outs):
        return result
    args_by_storage = {}
    for a in flat_args or ():
        if isinstance(a, torch.Tensor) and a.layout == torch.strided and not a.is_conj() and not a.is_neg():
            args_by_storage.setdefault((a.untyped_storage().data_ptr(), a.dtype, a.device), a)
    remade = [_remade(o, args_by_storage) if _custom_function_view(o) else o for o in outs]
    if type(result) not in (tuple, list):
        return remade[0]
    return type(result)(remade)
