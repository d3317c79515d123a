"""Writes into inputs that require grad: run on a clone, written back in eager.

Note [cloned inputs, written back in eager] (``refusals/autograd.py``):
Thunder 0.2.6's autodiff loses writes into inputs that require grad, but gets
writes into tensors the program made right. So when the fusion pass refuses such
a write (``WriteIntoGradInput``), ``api`` compiles the program again with that
positional argument cloned first, returns the clone's final value beside the
outputs, and copies it back into the caller's tensor in eager torch, whose
``copy_`` gives the tensor eager's history (CopySlices semantics for free).

Not done (still refused): an input sharing a storage with another argument
(cloning would cut the alias), a tensor passed by keyword or inside a container,
and a write under the program's own ``torch.no_grad()`` (Thunder drops the
gradient through it even into a clone: ``with torch.no_grad(): p.sub_(g * lr)``
then ``p * g`` gives ``p.grad`` None, checked).
"""

from __future__ import annotations

import torch


def position_of(tensor, args: tuple, flat: list):
    """The position of ``tensor`` among the positional ``args``, or None when it cannot be cloned
    alone: not a top-level positional argument, or sharing a storage with another tensor argument."""
    if not isinstance(tensor, torch.Tensor):
        return None
    positions = [i for i, a in enumerate(args) if a is tensor]
    if len(positions) != 1:
        return None
    storage = tensor.untyped_storage().data_ptr()
    for other in flat:
        if isinstance(other, torch.Tensor) and other is not tensor and other.untyped_storage().data_ptr() == storage:
            return None
    return positions[0]


def cloning(fn, positions: dict):
    """``fn`` with the positional arguments at ``positions`` (position -> grad mode) cloned first;
    returns (``fn``'s result, the clones)."""
    order = sorted(positions)

    def cloned_inputs(*args, **kwargs):
        args = list(args)
        clones = []
        for i in order:
            args[i] = args[i].clone()
            clones.append(args[i])
        return fn(*args, **kwargs), tuple(clones)

    return cloned_inputs


def write_back(result, args: tuple, positions: dict):
    """Copy each clone back into the caller's argument, in eager, under its write's grad mode;
    return ``fn``'s own result."""
    out, clones = result
    for i, clone in zip(sorted(positions), clones):
        with torch.set_grad_enabled(positions[i]):
            args[i].copy_(clone)
    return out
