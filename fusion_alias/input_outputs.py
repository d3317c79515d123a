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
    ``narrow``) are roots of their own in the input's memory group, not chain steps: such an output is
    replayed as the view chain of its argument, then torch's own method (``c.mul_(2).diagonal()`` is
    ``torch.Tensor.diagonal(c)``; ``contiguous`` of a transposed ``c`` is a copy, as in eager). Any other
    op that may return a view of a written input, a chain step with no torch replay here, or a symbolic
    argument, is refused when the program is compiled, and a replay that does not share the caller's memory
    at run time raises: both name the output, instead of returning a copy a later write would miss.
"""

from __future__ import annotations

import torch
from thunder.core.proxies import Proxy, TensorProxy

from fusion_alias import ops
from fusion_alias.errors import AliasInputError


def _replay_steps(chain, name: str) -> tuple:
    """``chain`` (view prims) as ``(torch function, args, kwargs)`` steps, or a loud refusal."""
    steps = []
    for step in chain:
        info = ops.op_info(step)
        args, kwargs = tuple(step.args[1:]), dict(step.kwargs)
        symbolic = any(isinstance(a, Proxy) for a in (*args, *kwargs.values()))
        if info is None or info.torch_fn is None or symbolic:
            raise AliasInputError(
                f"fusion_alias: in a call that computes gradients and writes in place, the output {name} is a view "
                f"({step.sym.name}) of a written input that fusion_alias cannot remake on the caller's tensor: not "
                "supported (it would be a copy, and a later write into it would not reach the input). Workaround: "
                "return a `.clone()` of it"
            )
        steps.append((info.torch_fn, args, kwargs, False))
    return tuple(steps)


# views fusion_alias keeps whole (aliasing: opaque, a root of their own in their argument's memory group) that
# are replayed by torch's own method of the name: eager's answer on the caller's tensor (``contiguous`` of a
# contiguous tensor is that tensor, of another a copy, as in eager)
_OPAQUE_REPLAYS = frozenset({"contiguous", "diagonal", "narrow"})


def _opaque_step(bsym, name: str) -> tuple:
    tensors = [a for a in bsym.flat_args if isinstance(a, TensorProxy)]
    args, kwargs = tuple(bsym.args[1:]), dict(bsym.kwargs)
    symbolic = any(isinstance(a, Proxy) for a in (*args, *kwargs.values()))
    if bsym.sym.name not in _OPAQUE_REPLAYS or len(tensors) != 1 or bsym.args[0] is not tensors[0] or symbolic:
        raise AliasInputError(
            f"fusion_alias: in a call that computes gradients and writes in place, the output {name} may be a view "
            f"of a written input made by an op fusion_alias cannot see through ({bsym.sym.name}): not supported (it "
            "would be a copy, and a later write into it would not reach the input). Workaround: return a `.clone()`"
        )
    return getattr(torch.Tensor, bsym.sym.name), args, kwargs


def outputs_of_written_inputs(outs, info, rewriter, tensor_inputs, positions: dict, flat) -> tuple:
    """Per output whose memory is an input the functionalized call writes (or clones, sharing its storage):
    ``(output index, input position, replay steps, detached)`` (Note [an output that is a written input,
    functionalized]). A replay step is ``(torch function, args, kwargs, may copy)``."""
    names = {p.name for p in tensor_inputs}
    cloned = {r for r in names if r in rewriter.current or r in rewriter.memory}
    groups = {info.group(r) for r in cloned}
    producers = None
    found = []
    for i, o in enumerate(outs):
        if not isinstance(o, TensorProxy):
            continue
        root, opaque = info.root.get(o.name), ()
        if root is not None and root not in names and info.group(root) in groups:
            if producers is None:
                producers = {out.name: b for b in flat for out in b.flat_outs if isinstance(out, TensorProxy)}
            made = producers.get(root)
            if made is None:
                continue
            opaque = ((*_opaque_step(made, o.name), True),)
            arg = made.args[0]
            chain = tuple(_replay_steps(info.chain.get(arg.name, ()), o.name)) + opaque
            chain += _replay_steps(info.chain.get(o.name, ()), o.name)
            root = info.root.get(arg.name)
        else:
            chain = _replay_steps(info.chain.get(o.name, ()), o.name)
        if root not in cloned or root not in positions:
            continue
        found.append((i, positions[root], chain, o.name in rewriter.detached))
    return tuple(found)


def as_caller_view(caller: torch.Tensor, steps: tuple, detached: bool, index: int) -> torch.Tensor:
    """The caller's tensor with the view ``steps`` replayed on it (after the write-backs)."""
    t = caller
    for fn, args, kwargs, may_copy in steps:
        t = fn(t, *args, **kwargs)
        if may_copy and t.untyped_storage().data_ptr() != caller.untyped_storage().data_ptr():
            return t.detach() if detached else t  # eager's copy too (``contiguous`` of another layout)
    if steps and t.numel() and t.untyped_storage().data_ptr() != caller.untyped_storage().data_ptr():
        raise AliasInputError(
            f"fusion_alias: output {index} of a call that computes gradients is, in eager, a view of an input the "
            "call writes, and its view could not be made on the caller's tensor's layout: not supported. Workaround: "
            "return a `.clone()` of it"
        )
    return t.detach() if detached else t
