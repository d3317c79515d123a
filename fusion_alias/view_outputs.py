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

    An output that is a view of a written input is, in the functionalized program, a view of that
    input's final value, a new tensor that ``write_back`` copies into the input, so it did not share the
    caller's memory at all (seed 20739 #3, ``--grad``: ``t0 = c.view(-1); t1 = t0[1::2]; c.clip_(...);
    t0.detach()[1] = -1.5``, the last statement in the next piece, raised "its base ... has been
    modified inplace"). Where both the final value and the input are contiguous and of one shape (so an
    element's place in one is its place in the other), such an output is remade as the same view of the
    input. Since session 20 an output whose memory is a written input is first made the caller's tensor, or
    its view replayed on it (input_outputs.py, Note [an output that is a written input, functionalized]);
    what is left here are views that have no replay there, which that module checks after this remaking.
"""

from __future__ import annotations

import torch


def _custom_function_view(t) -> bool:
    return (isinstance(t, torch.Tensor) and t._base is not None and t.requires_grad
            and isinstance(t.grad_fn, torch.autograd.function.BackwardCFunction)
            and not t.is_conj() and not t.is_neg())


def _inside(t: torch.Tensor, source: torch.Tensor) -> bool:
    """Whether every element of ``t`` is an element of the contiguous ``source`` (same storage)."""
    if t.numel() == 0 or any(st < 0 for st in t.stride()):
        return False
    low = t.storage_offset()
    high = low + sum((n - 1) * st for n, st in zip(t.size(), t.stride()))
    return source.storage_offset() <= low and high < source.storage_offset() + source.numel()


_MAX_COVER_EXTENT = 1 << 20  # elements: an index of 8 MiB at most, on the call's path


def _covers(source: torch.Tensor, t: torch.Tensor) -> bool:
    """Whether every element of ``t`` is an element of ``source`` (one storage, any strides)."""
    if source.is_contiguous():
        return _inside(t, source)
    if t.numel() == 0 or any(st < 0 for st in (*t.stride(), *source.stride())):
        return False
    extent = max(source.storage_offset() + sum((n - 1) * st for n, st in zip(source.size(), source.stride())),
                 t.storage_offset() + sum((n - 1) * st for n, st in zip(t.size(), t.stride()))) + 1
    if extent > _MAX_COVER_EXTENT:  # (a per-call cost bounded: "not told", Thunder's output is kept, still right)
        return False
    at = torch.arange(extent)
    return bool(torch.isin(at.as_strided(t.size(), t.stride(), t.storage_offset()).reshape(-1),
                           at.as_strided(source.size(), source.stride(), source.storage_offset()).reshape(-1)).all())


# Note [the argument an output view is remade from]
#     Session 21. Arguments that share one storage (``f(x[0, 2], x[0, 1])``) all match an output's storage; the
#     first was taken, so ``return c.view(1, 1), a * 2`` remade ``c.view(1, 1)`` as ``a.as_strided(...)`` at c's
#     offset: the same element, but its gradient went through ``a``'s as_strided backward, which has no place for
#     it, and ``x[0, 1]``'s gradient was lost (fuzz seed 20775 #16, dtype --grad; plain thunder.jit was right).
#     Where several arguments share the storage and not all of them hold all of its elements, which argument
#     eager's output is a view of is not told (``a.as_strided(...)`` reaching past ``a``: eager's backward drops
#     those elements, 20777 #12), so it is left Thunder's output, whose gradients are eager's (a later in-place
#     write into it then raises PyTorch's "is a view and is being modified inplace", loud). The same where one
#     argument shares the storage without holding the output's elements: ``f(x0, x2.diagonal())`` reading
#     ``h1 = x2[1, 2]`` from a closure and returning ``h1.reshape(-1)`` remade it from the diagonal, and
#     ``x2[1, 2]``'s gradient was lost (fuzz seed 20777 #29, hidden --grad; the closure's tensor is not an
#     argument here).
def _remade(t: torch.Tensor, sources: list) -> torch.Tensor:
    """``t`` as a view of the caller's tensor whose memory (or whose final value) it shares, or ``t``."""
    key = (t.untyped_storage().data_ptr(), t.dtype, t.device)
    candidates = [(target, source) for target, source in sources
                  if (source.untyped_storage().data_ptr(), source.dtype, source.device) == key and target.requires_grad]
    if not all(_covers(source, t) for _, source in candidates):
        return t  # Note [the argument an output view is remade from]: which one eager's is a view of is not told
    for target, source in candidates:
        if source is target:
            return target.as_strided(t.size(), t.stride(), t.storage_offset())
        if (source.is_contiguous() and target.is_contiguous() and source.shape == target.shape
                and _inside(t, source)):
            offset = t.storage_offset() - source.storage_offset() + target.storage_offset()
            return target.as_strided(t.size(), t.stride(), offset)
    return t


def _sources_of(flat_args) -> list:
    return [(a, a) for a in flat_args or ()
            if isinstance(a, torch.Tensor) and a.layout == torch.strided and not a.is_conj() and not a.is_neg()]


def remade_outputs(result, sources: list):
    """``result`` with each output that is a custom Function's view of memory in ``sources`` (pairs of the
    caller's tensor and the tensor holding its memory in the program: itself, or the final value of a
    written input) remade as a view of the caller's tensor (Note [an output view of an argument, written in
    place later])."""
    outs = result if type(result) in (tuple, list) else (result,)
    if not sources or not any(_custom_function_view(o) for o in outs):
        return result
    remade = [_remade(o, sources) if _custom_function_view(o) else o for o in outs]
    if type(result) not in (tuple, list):
        return remade[0]
    return type(result)(remade)


def argument_views_outside_function(result, flat_args):
    """``remade_outputs`` for outputs that share memory with an argument. It runs on every call that computes
    gradients: the arguments are looked through only where an output is a custom Function's view."""
    outs = result if type(result) in (tuple, list) else (result,)
    if not any(_custom_function_view(o) for o in outs):
        return result
    return remade_outputs(result, _sources_of(flat_args))
