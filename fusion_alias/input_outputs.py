"""Outputs that are, in eager, the memory of an input the call writes: returned as the caller's tensor.

Note [an output that is a written input, functionalized]
    A call that computes gradients and writes in place is functionalized (autograd_functionalize.py): the
    program computes the final value of each written input, Thunder's autograd Function returns it, and
    ``write_back`` copies it into the caller's tensor in eager. An output whose memory is that input's
    (the input itself, or a view of it) came back as another of the Function's outputs: a new tensor with
    the right values, but not the caller's memory. Worked example, ``c = leaf * 1``::

        def f(c):
            return c.mul_(0.5)          # eager: the result *is* c; c.grad_fn is MulBackward0

        out = fusion_alias.jit(f)(c)
        out.detach().exp_()             # eager: writes c. Before: wrote a tensor nobody else sees

    so ``c`` (and a loss over ``c``) differed from eager's with no error (fuzz seed 20739 #11, ``--grad``,
    under ``torch.compile``: the next piece wrote through the returned value). The same for ``return c``,
    ``return c.t()``, and ``return [c.add_(1), c]`` (eager: one tensor twice; here two tensors, which an
    Inductor piece compiled for duplicates rejects, seed 20737 #3).

    The rule: an output whose memory root (``aliasing.analyze``) is a tensor input the program writes, or
    one that shares its storage (the inputs ``clone_written_inputs`` starts from clones), is, after the
    write-backs, the output's view chain (view prims from the input) replayed in torch on the caller's
    tensor: ``c`` itself for an empty chain, ``c.permute(1, 0)`` for ``c.t()``. That is eager's tensor:
    the write-back gave ``c`` the final value with autograd history (``CopyBackwards`` into the Function's
    final value, whose backward reaches the old ``c``, as ``mark_dirty`` would for a custom Function), so
    ``out.sum()`` and ``c.sum()`` send their gradients the same way, and a later write into ``out`` is a
    write into ``c``. The Function's own output at that place is dropped (it gets no gradient, which is
    right: the same gradient arrives through ``c``'s history). An output read through ``detach`` gets
    ``.detach()`` last. Replayed views keep eager's layout: the chain's prims are eager's view ops on the
    same tensor (``permute``, ``squeeze``, slicing, ``reshape`` where it is a view; a ``reshape`` that
    copies in eager got a ``clone`` before it, so it is not in a chain).

    Views fusion_alias keeps whole (``diagonal``, which Thunder decomposes into a gather; ``contiguous``;
    ``narrow``; ``swapaxes``) are roots of their own in the input's memory group, not chain steps: such an
    output is replayed as the view chain of its argument, then torch's own method (``c.mul_(2).diagonal()``
    is ``torch.Tensor.diagonal(c)``; ``contiguous`` of a transposed ``c`` is a copy, as in eager). An output
    eager makes as a new view with no step (``c.mul_(2).view_as(c)``) gets ``view_as``, so it is not ``c``
    itself. ``c.view(torch.int32)`` (``prims.bitcast``) is replayed as that ``view``. Any other op that may
    return a view of a written input, or a chain step
    with no torch replay here or a symbolic argument, is left to ``view_outputs`` (Note [an output view of an
    argument, written in place later]), and the call raises, naming the output, where the result does not
    share the caller's memory: a copy a later write would miss is never returned.
"""

from __future__ import annotations

import torch
import thunder.core.prims as prims
from thunder.core.dtypes import to_torch_dtype
from thunder.core.proxies import Proxy, TensorProxy
from thunder.core.pytree import tree_map

from fusion_alias import ops, tensor_identity
from fusion_alias.errors import AliasInputError
from fusion_alias.gather_views import is_gather_view


def _replay_steps(chain) -> tuple | None:
    """``chain`` (view prims) as ``(torch function, args, kwargs, may copy)`` steps, or None where a step has
    no torch replay here or a symbolic argument."""
    steps = []
    for step in chain:
        if is_gather_view(step):  # (gather_views.py: replayed by torch's method of the name)
            replay = _opaque_step(step)
            if replay is None:
                return None
            steps.append(replay)
            continue
        info = ops.op_info(step)
        args, kwargs = tuple(step.args[1:]), dict(step.kwargs)
        if info is None or info.torch_fn is None or any(isinstance(a, Proxy) for a in (*args, *kwargs.values())):
            return None
        steps.append((info.torch_fn, args, kwargs, False))
    return tuple(steps)


# views fusion_alias keeps whole (aliasing: opaque, a root of their own in their argument's memory group) that
# are replayed by torch's own method of the name: eager's answer on the caller's tensor (``contiguous`` of a
# contiguous tensor is that tensor, of another a copy, as in eager)
_OPAQUE_REPLAYS = frozenset({"contiguous", "diagonal", "narrow", "swapaxes", "swapdims"})


def _bitcast(t: torch.Tensor, dtype) -> torch.Tensor:
    return t.view(to_torch_dtype(dtype))  # ``prims.bitcast``: eager's ``t.view(dtype)``


def _opaque_step(bsym) -> tuple | None:
    tensors = [a for a in bsym.flat_args if isinstance(a, TensorProxy)]
    args, kwargs = tuple(bsym.args[1:]), dict(bsym.kwargs)
    symbolic = any(isinstance(a, Proxy) for a in (*args, *kwargs.values()))
    if len(tensors) != 1 or bsym.args[0] is not tensors[0] or symbolic:
        return None
    if bsym.sym.id is prims.PrimIDs.BITCAST:
        return _bitcast, args, kwargs, False
    if bsym.sym.name not in _OPAQUE_REPLAYS:
        return None
    return getattr(torch.Tensor, bsym.sym.name), args, kwargs, True


def _steps_from_input(name: str, info, cloned: set, producers: dict, depth: int = 0):
    """``(input root, replay steps)`` that make ``name`` from a cloned input, through view chains and the
    opaque views ``_opaque_step`` replays, or None."""
    root, chain = info.root.get(name), _replay_steps(info.chain.get(name, ()))
    if root is None or chain is None:
        return None
    if root in cloned:
        return root, chain
    made = producers.get(root)
    step = _opaque_step(made) if made is not None and depth < 8 else None
    if step is None:
        return None
    found = _steps_from_input(made.args[0].name, info, cloned, producers, depth + 1)
    return None if found is None else (found[0], found[1] + (step,) + chain)


def _identity_view(t: torch.Tensor) -> torch.Tensor:
    return t.view_as(t)


# symbols eager answers with the tensor itself where nothing changes (a dtype it has, the real part of a real
# tensor): a view prim with no step in Thunder's trace, not a new view in eager
_RETURN_SELF = frozenset({"to", "type_as", "real", "contiguous", "float", "double", "half", "bfloat16", "int",
                          "long", "bool", "type", "cpu", "cuda", "resolve_conj", "resolve_neg"})


def _returns_self(bsym) -> bool:
    """Whether eager returns the program's symbol ``bsym`` (None: not one) as its operand itself: by name, or
    as the trace tells (tensor_identity.py, Note [conversions that return their own tensor]: ``x.sum_to_size``
    of its own shape, ``x.conj()`` of a real ``x``, ``x.flatten(0, 0)``, ``torch.atleast_2d`` of a matrix)."""
    return bsym is not None and (bsym.sym.name in _RETURN_SELF or tensor_identity.is_its_operand(bsym))


def outputs_of_written_inputs(outs, info, rewriter, tensor_inputs, positions: dict, flat, traced=()) -> tuple:
    """Per output whose memory is an input the functionalized call writes (or clones, sharing its storage):
    ``(output index, input position, replay steps or None, detached)`` (Note [an output that is a written
    input, functionalized]). A replay step is ``(torch function, args, kwargs, may copy)``; None: no replay,
    the output must share the input's memory after ``view_outputs``' remaking, or the call raises. ``traced``:
    the program's own (unflattened) symbols."""
    traced = {o.name: b for b in traced for o in b.flat_outs if isinstance(o, TensorProxy)}
    names = {p.name for p in tensor_inputs}
    cloned = [r for r in names if r in rewriter.current or r in rewriter.memory]
    cloned_set = set(cloned)
    group_input = {}
    for r in cloned:
        group_input.setdefault(info.group(r), r)
    producers = {out.name: b for b in flat for out in b.flat_outs if isinstance(out, TensorProxy)}
    found = []
    for i, o in enumerate(outs):
        if not isinstance(o, TensorProxy):
            continue
        root = info.root.get(o.name)
        if root is not None and root not in names and info.group(root) in group_input:
            found_steps = _steps_from_input(o.name, info, cloned_set, producers)  # an opaque view of a written input
            root, steps = found_steps if found_steps is not None else (group_input[info.group(root)], None)
        elif root in cloned_set:
            steps = _replay_steps(info.chain.get(o.name, ()))
            made = producers.get(o.name)
            if (steps == () and made is not None and ops.is_view(made)  # ``c.view_as(c)``: eager's is a new view,
                    and not _returns_self(traced.get(o.name))):  # but ``c.to(c.dtype)`` is ``c``
                steps = ((_identity_view, (), {}, False),)
        else:
            continue
        if root in positions:
            found.append((i, positions[root], steps, o.name in rewriter.detached))
    return tuple(found)


def outputs_as_the_callers(out, returned, outputs, sources, remade_outputs):
    """``out`` with each output of ``outputs`` (WriteBacks.outputs: caller's tensor, steps, detached, index; in
    the order of ``returned``, the Function's outputs there) made the caller's tensor or its view: replayed, or,
    without steps, remade by ``view_outputs`` and checked to share the caller's memory."""
    callers = {}
    for t, (caller, steps, detached, i) in zip(returned, outputs):
        if steps is not None:
            callers[id(t)] = as_caller_view(caller, steps, detached, i)
            continue
        r = remade_outputs(t, sources)
        if t.numel() and r.untyped_storage().data_ptr() != caller.untyped_storage().data_ptr():
            raise AliasInputError(
                f"fusion_alias: output {i} of a call that computes gradients is, in eager, a view of an input the "
                "call writes, made by an op fusion_alias cannot remake on the caller's tensor: not supported (it "
                "would be a copy, and a later write into it would not reach the input). Workaround: return a "
                "`.clone()` of it"
            )
        callers[id(t)] = r
    return tree_map(lambda t: callers.get(id(t), t) if isinstance(t, torch.Tensor) else t, out)


def as_caller_view(caller: torch.Tensor, steps: tuple, detached: bool, index: int) -> torch.Tensor:
    """The caller's tensor with the view ``steps`` replayed on it (after the write-backs)."""
    t, copied = caller, False
    for fn, args, kwargs, may_copy in steps:
        t = fn(t, *args, **kwargs)
        # eager's copy too (``contiguous`` of another layout): what follows is a view of that copy
        copied = copied or (may_copy and t.untyped_storage().data_ptr() != caller.untyped_storage().data_ptr())
    if not copied and steps and t.numel() and t.untyped_storage().data_ptr() != caller.untyped_storage().data_ptr():
        raise AliasInputError(
            f"fusion_alias: output {index} of a call that computes gradients is, in eager, a view of an input the "
            "call writes, and its view could not be made on the caller's tensor's layout: not supported. Workaround: "
            "return a `.clone()` of it"
        )
    return t.detach() if detached else t
