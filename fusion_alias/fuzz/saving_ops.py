"""The basic generator's out-of-place statements also draw ops that save their input for the backward.

Note [ops that save what a later write changes]
    Session 41 found about forty ops whose eager backward reads an input (or their result) that a later in-place
    write changes, so eager raises "modified by an inplace operation" at backward, where fusion_alias returned a
    gradient: refusals/saved_versions.py's table had no entry (``a / b`` traces as ``true_divide``, which it
    lacked; ``std``, ``hypot``, ``lerp`` with a tensor weight, ``normalize``, ``logcumsumexp``...). The basic
    generator's out-of-place ops were ``tanh``, ``sin``, ``exp``, ``*``, ``maximum``, ``amax`` and a few more, whose
    saves the table held already, so no fuzz run drew the class. With ``--saving-ops`` (``P_SAVING`` 0.25; 0
    otherwise), with probability ``P_SAVING`` an out-of-place
    statement of a floating ``x`` of at least one dimension is one of ``_OPS`` over ``x`` instead::

        t3 = torch.hypot(a, a * 0.5)       # then, as before, a later statement may write a (or t3)

    Drawn from a stream seeded from the ``opaque`` stream's state without drawing from it: every other draw of
    the program is the one it was, and without the flag every program is (the basic generator's statements are
    those of most generators: every pinned stream holds some). ``x`` stays the statement's one read (each op
    reads only ``x``).
"""

from __future__ import annotations

import random

import torch

P_SAVING = 0.0  # (0.25 with --saving-ops: cli.py)

_OPS = (
    "{x} / ({x}.abs() + 0.5)", "{x}.std(-1, keepdim=True)", "torch.hypot({x}, {x} * 0.5)",
    "torch.lerp({x}, {x} * 2, {x}.sigmoid())", "torch.nn.functional.softsign({x})", "{x}.logcumsumexp(-1)",
    "torch.nn.functional.normalize({x}, dim=-1)", "torch.xlogy({x}, {x}.abs() + 0.1)", "{x}.clamp(min={x} * 0.5)",
    "torch.cummax({x}, -1).values", "{x}.max()", "{x}.median()", "torch.logaddexp({x}, {x} * 0.5)",
    "torch.var_mean({x}, -1)[0]", "torch.nn.functional.mse_loss({x}, {x} * 0.5)", "torch.nn.functional.softshrink({x})",
    "torch.fmod({x}, {x}.abs() + 0.5)", "{x}.asinh()", "torch.copysign({x}, {x} - 0.25)", "2 ** {x}",
)


def saving_in(opaque: random.Random, env: dict, e: str, x: str) -> str:
    """``e``, or with probability ``P_SAVING`` one of ``_OPS`` over ``x`` (module Note)."""
    t = env.get(x)
    if P_SAVING <= 0 or not isinstance(t, torch.Tensor) or t.dtype not in (torch.float32, torch.float64) or t.dim() < 1:
        return e
    own = random.Random(str(opaque.getstate()[1][:16]) + ":saving:" + x)
    return own.choice(_OPS).format(x=x) if own.random() < P_SAVING else e
