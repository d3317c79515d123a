"""Compare a call that computes gradients with eager, one reference schedule at a time, where NaN and infinities
are the point: values, written inputs and leaf gradients (``grad_helpers.assert_same_nested``: NaN equal to NaN, a
None where eager has zeros fails), and each output's ``requires_grad``. The draws of a call (``bernoulli``) are
seeded alike on both sides; the loss weights each output by seeded random numbers.
"""

from __future__ import annotations

import torch

import fusion_alias
from tests.grad_helpers import assert_same_nested


def leaves_from(*values, dtype=torch.float32):
    """``make()`` for :func:`assert_matches_eager`: fresh leaves of ``values``, and the call's arguments (``leaf * 1``,
    non-leaves that may be written)."""
    def make():
        leaves = [torch.tensor(v, dtype=dtype, requires_grad=True) for v in values]
        return leaves, [leaf * 1 for leaf in leaves]

    return make


def run_with_random_loss(fn, make):
    """(outputs, the call's arguments after it, the leaves' ``.grad``, each output's ``requires_grad``) of one call of
    ``fn`` on ``make()``'s fresh arguments, its draws seeded, with a loss weighting each output that requires grad by
    seeded random numbers."""
    leaves, args = make()
    torch.manual_seed(0)
    outs = fn(*args)
    outs = outs if isinstance(outs, tuple) else (outs,)
    flags = [o.requires_grad for o in outs]
    weights = torch.Generator().manual_seed(1)
    diff = [o for o in outs if o.requires_grad]
    if diff:
        sum((o * torch.rand(o.shape, generator=weights, dtype=o.dtype)).sum() for o in diff).backward()
    return ([o.detach().clone() for o in outs], [a.detach().clone() for a in args], [leaf.grad for leaf in leaves],
            flags)


def assert_matches_eager(fn, make, schedule: str, *, calls: int = 2) -> None:
    """``fusion_alias.jit(fn)`` on ``schedule`` gives eager's values, written inputs, gradients (NaN as NaN, None
    only where eager's is None) and ``requires_grad`` flags, on the first and the cached calls (one schedule per
    test, where ``grad_helpers.assert_runs_like_eager`` loops over them)."""
    want = run_with_random_loss(fn, make)
    jitted = fusion_alias.jit(fn, backend="reference", schedule=schedule)
    for call in range(calls):
        assert_same_nested(run_with_random_loss(jitted, make), want, f"{schedule} call {call}")
