"""The layout generator's kernel form also draws the stacks, ``kron`` and ``tile``: results that are new memory.

Note [new-memory ops in the kernel form]
    Session 40 fixed ``torch.hstack``/``vstack``/``row_stack``/``dstack``/``column_stack`` (traced as the ``cat`` of
    ``atleast_*d`` views they are: stack_family.py), a write after ``torch.kron`` with gradients (refused: eager's
    save is untracked, refusals/untracked_saves.py) and ``x.tile(...)`` with gradients (new memory:
    fresh_results.py), all by hand: no generator wrote them. With probability ``P_FRESH`` the kernel form
    (kernel_layouts.py, Note [a kernel's result written through a reshape]) uses one of them in place of the op it
    drew, over the same layout of ``x``, and goes on as before (a reshape of the result, written or read)::

        t = torch.dstack([x.t(), x.t()])     # or hstack, vstack, row_stack, column_stack, kron, tile
        r = t.reshape(-1)

    Drawn from a stream of its own, seeded from the kernel stream's state without drawing from it: the kernel
    stream keeps its draws, and with ``P_FRESH`` 0 every program is the one it was (the tests that pin the layout
    stream set it so).
"""

from __future__ import annotations

import random

P_FRESH = 0.3

_OPS = ("torch.hstack([{x}, {x}])", "torch.vstack([{x}, {x} * 2])", "torch.row_stack([{x}, {x}])",
        "torch.dstack([{x}, {x}])", "torch.column_stack([{x}, {x} * 2])", "torch.kron({x}, {x})",
        "{x}.tile((2,))", "{x}.tile((2, 1))")


def expr(kernel: random.Random, src: str) -> str | None:
    """One of the ops over ``src`` (module Note), or None (not drawn)."""
    if P_FRESH <= 0:
        return None
    own = random.Random(str(kernel.getstate()[1][:16]) + ":fresh-memory")
    return own.choice(_OPS).format(x=src) if own.random() < P_FRESH else None
