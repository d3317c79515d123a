"""How two views of one memory relate: one input as a view of another (``relate``), a view as a box
of its root's indices (``view_box``), and which view chains can be undone (``invertible``).

Used by ``base_updates`` (one base per memory) and ``graph`` (writes into disjoint views).
"""

from __future__ import annotations

import torch
import thunder.core.prims as prims

_PrimIDs = prims.PrimIDs
_INVERTIBLE = frozenset({_PrimIDs.SLICE, _PrimIDs.SQUEEZE, _PrimIDs.TRANSPOSE, _PrimIDs.RESHAPE,
                         _PrimIDs.BROADCAST_IN_DIM, _PrimIDs.SHALLOW_COPY})


def relate(base: torch.Tensor, t: torch.Tensor):
    """The view steps that make ``t`` from ``base`` (``[("slice", starts, ends), ("squeeze", dims),
    ("permute", perm), ("reshape", shape)]``, those needed), or None when ``t`` is not such a view.

    >>> x = torch.zeros(5, 5)
    >>> relate(x, x[0, 0])
    [('slice', [0, 0], [1, 1]), ('squeeze', [0, 1])]
    >>> relate(x, x.t())
    [('permute', [1, 0])]
    >>> relate(x[:, ::2], x[:, 1::2]) is None
    True
    """
    if (base.dtype != t.dtype or base.device != t.device or base.layout != torch.strided
            or t.layout != torch.strided or base.numel() == 0 or t.numel() == 0):
        return None
    if base.untyped_storage().data_ptr() != t.untyped_storage().data_ptr():
        return None
    offset = t.storage_offset() - base.storage_offset()
    dims = [d for d in range(base.ndim) if base.shape[d] > 1]
    if offset < 0 or any(base.stride(d) <= 0 for d in dims):
        return None
    start = [0] * base.ndim
    rest = offset
    for d in sorted(dims, key=lambda d: -base.stride(d)):
        q = min(rest // base.stride(d), base.shape[d] - 1)
        start[d] = q
        rest -= q * base.stride(d)
    if rest:
        return None
    taken: list[int] = []  # the base dimension of each of t's dimensions of size > 1, in t's order
    size = [1] * base.ndim
    for k in range(t.ndim):
        if t.shape[k] == 1:
            continue
        match = [d for d in dims if d not in taken and base.stride(d) == t.stride(k)]
        if len(match) != 1 or start[match[0]] + t.shape[k] > base.shape[match[0]]:
            return None
        taken.append(match[0])
        size[match[0]] = t.shape[k]
    steps: list = []
    end = [s + n for s, n in zip(start, size)]
    if start != [0] * base.ndim or end != list(base.shape):
        steps.append(("slice", start, end))
    squeezed = [d for d in range(base.ndim) if d not in taken]
    if squeezed:
        steps.append(("squeeze", squeezed))
    kept = [d for d in range(base.ndim) if d in taken]
    perm = [kept.index(d) for d in taken]
    if perm != sorted(perm):
        steps.append(("permute", perm))
    if len(taken) != t.ndim:
        steps.append(("reshape", list(t.shape)))
    view = _replay_on_tensor(base, steps)
    if view.shape != t.shape or view.data_ptr() != t.data_ptr() or any(
        view.stride(k) != t.stride(k) for k in range(t.ndim) if t.shape[k] > 1
    ):
        return None  # (a layout the steps above do not describe)
    return steps


def _replay_on_tensor(x: torch.Tensor, steps) -> torch.Tensor:
    for kind, *a in steps:
        if kind == "slice":
            x = x[tuple(slice(s, e) for s, e in zip(*a))]
        elif kind == "squeeze":
            x = x.squeeze(tuple(a[0]))
        elif kind == "permute":
            x = x.permute(tuple(a[0]))
        else:
            x = x.view(tuple(a[0]))
    return x


def invertible(chain) -> bool:
    for step in chain:
        pid = step.sym.id
        if pid not in _INVERTIBLE:
            return False
        if pid is _PrimIDs.SLICE and len(step.args) > 3 and step.args[3] is not None and any(s != 1 for s in step.args[3]):
            return False
        if pid is _PrimIDs.BROADCAST_IN_DIM:
            src, shape, bdims = step.args[0], step.args[1], step.args[2]
            added = [d for d in range(len(shape)) if d not in bdims]
            if any(shape[d] != 1 for d in added) or any(shape[d] != src.shape[i] for i, d in enumerate(bdims)):
                return False  # an expand: many elements of the view are one of the base
    return True


def view_box(info, name: str, root_shape=None) -> tuple | None:
    """Note [views as boxes of their root]: the elements of ``name`` as a box of its root's
    indices, ``((lo, hi), ...)`` per root dimension, when its view chain is slices of step 1,
    squeezes, permutes and unsqueezes (each element of the box belongs to the view); None for
    any other chain. Two views of one root whose boxes do not meet share no element:
    ``a[0]`` is ``((0, 1), (0, n))``, ``a[1]`` is ``((1, 2), (0, n))``."""
    chain = info.chain[name]
    if root_shape is None:
        if not chain:
            return None
        root_shape = tuple(chain[0].args[0].shape)
    box = [[0, n] for n in root_shape]
    dims: list = list(range(len(root_shape)))  # root dimension of each dimension of the view so far
    for step in info.chain[name]:
        pid = step.sym.id
        if pid is _PrimIDs.SHALLOW_COPY:
            continue
        if pid is _PrimIDs.SLICE:
            if len(step.args) > 3 and step.args[3] is not None and any(s != 1 for s in step.args[3]):
                return None
            for d, (s, e) in enumerate(zip(step.args[1], step.args[2])):
                r = dims[d]
                if r is None:
                    continue
                lo = box[r][0]
                box[r] = [lo + s, lo + e]
        elif pid is _PrimIDs.SQUEEZE:
            n = len(dims)
            gone = {d % n for d in step.args[1]} if n else set()
            dims = [r for d, r in enumerate(dims) if d not in gone]
        elif pid is _PrimIDs.TRANSPOSE:
            dims = [dims[p] for p in step.args[1]]
        elif pid is _PrimIDs.BROADCAST_IN_DIM and invertible((step,)):
            out = [None] * len(step.args[1])
            for i, d in enumerate(step.args[2]):
                out[d] = dims[i]
            dims = out
        else:
            return None
    return tuple(tuple(b) for b in box)


def boxes_disjoint(a: tuple | None, b: tuple | None) -> bool:
    """True when two boxes of one root (``view_box``) share no element."""
    if a is None or b is None or len(a) != len(b):
        return False
    return any(x_hi <= y_lo or y_hi <= x_lo for (x_lo, x_hi), (y_lo, y_hi) in zip(a, b))
