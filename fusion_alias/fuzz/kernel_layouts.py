"""The layout generator's results whose layout eager's kernel decides, written through a reshape of them.

Note [a kernel's result written through a reshape]
    Session 35 (fusion_alias/eager_result_layouts.py, Note [a torch function's result has the layout eager's kernel
    gives it]): eager's ``masked_fill``, ``softmax``, ``batch_norm``, ``roll``, ``logsigmoid``... allocate their
    result contiguous whatever their operand's layout, and ``avg_pool2d``, ``F.pad``, ``rms_norm``, ``group_norm``,
    ``cat`` of a channels_last operand keep channels_last; whether ``t.reshape(-1)`` is then a view of ``t`` (a write
    through it shows in ``t``) or a copy follows that layout, and ``t.view(-1)`` runs or raises by it. No generator
    made such a result and wrote through a reshape of it. With probability ``P_KERNEL`` the layout generator's view
    statement is instead

        t = OP(src)          # src: x, x.t(), x.transpose(0, -1), x[:, ::2], or a channels_last 4-D view of x
        r = t.reshape(-1)    # (or t.flatten(), t.view(-1), t.flatten(1)), the next statement

    and the generator's scenario goes on as for its other reshapes (a write into ``r`` or ``t``, a read of the other
    side; ``t`` and ``r`` are returned). Drawn from ``kernel``, a stream of its own seeded from ``rng``'s state
    without drawing from it: with ``P_KERNEL`` 0 every program is the one it was (older tests pin that).
"""

from __future__ import annotations

import random

import torch

from fusion_alias.fuzz import fresh_memory_ops

P_KERNEL = 0.2

# (expression over ``{x}``, the least dim it needs); ``{c}`` is dim 1's size, ``{last}`` the last dim's
_OPS = (
    ("{x}.masked_fill({x} > 0, 1.0)", 1), ("torch.softmax({x}, 0)", 1), ("{x}.log_softmax(-1)", 1),
    ("torch.nn.functional.rms_norm({x}, ({last},))", 1), ("torch.nn.functional.layer_norm({x}, ({last},))", 1),
    ("torch.nn.functional.batch_norm({x}, torch.zeros({c}), torch.ones({c}))", 2), ("{x}.roll(1, 0)", 1),
    ("torch.cat([{x}, {x}], 0)", 1), ("torch.nn.functional.pad({x}, (1, 1))", 1),
    ("torch.nn.functional.logsigmoid({x})", 1), ("torch.nn.functional.rrelu({x}, training=False)", 1),
    ("{x}.cumsum(0)", 1), ("torch.sort({x}, 0).values", 1), ("{x}.index_fill(0, torch.tensor([0]), 2.0)", 1),
    ("torch.where({x} > 0, {x}, 0.0)", 1), ("{x}.exp()", 1), ("torch.nn.functional.avg_pool2d({x}, 1)", 4),
    ("torch.nn.functional.group_norm({x}, 1)", 3), ("torch.nn.functional.instance_norm({x})", 3),
    ("torch.nn.functional.interpolate({x}, scale_factor=2.0)", 4), ("torch.nn.functional.normalize({x}, dim=0)", 1),
)
_RESHAPES = ("{t}.reshape(-1)", "{t}.flatten()", "{t}.view(-1)", "{t}.flatten(1)")


def stream(rng: random.Random) -> random.Random:
    """The form's own stream (module Note)."""
    return random.Random(str(rng.getstate()[1][:16]) + ":kernel-layout")


def drawn(kernel: random.Random) -> bool:
    return P_KERNEL > 0 and kernel.random() < P_KERNEL


def kernel_expr(kernel: random.Random, x: str, t: torch.Tensor) -> str | None:
    """``OP(src)`` of a float32 ``x`` (value ``t``), src a layout of it (module Note); None where none fits."""
    if t.dtype != torch.float32 or t.dim() == 0:
        return None
    nd = t.dim()
    srcs = [x, f"{x}.transpose(0, -1)"] + ([f"{x}.t()" if nd == 2 else f"{x}.transpose(0, 1)"] if nd >= 2 else [])
    if nd >= 2 and t.shape[1] >= 2:
        srcs.append(f"{x}[:, ::2]")
    if nd == 3:  # a channels_last (1, C, H, W) view of a contiguous (H, W, C) x
        srcs += [f"{x}.unsqueeze(0).permute(0, 3, 1, 2)"] * 2
    src = kernel.choice(srcs)
    try:
        v = eval(src, {"torch": torch}, {x: t})
    except Exception:  # noqa: BLE001
        return None
    fits = [e for e, least in _OPS if v.dim() >= least and (least != 3 or v.dim() in (3, 4))
            and (least != 4 or v.dim() == 4)]
    e = kernel.choice(fits)
    fresh = fresh_memory_ops.expr(kernel, src)  # (fresh_memory_ops.py, Note [new-memory ops in the kernel form])
    return fresh or e.format(x=src, c=v.shape[1] if v.dim() > 1 else 1, last=v.shape[-1])


def reshape_expr(kernel: random.Random, t: str, nd: int) -> str:
    return kernel.choice(_RESHAPES if nd >= 2 else _RESHAPES[:3]).format(t=t)
