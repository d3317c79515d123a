"""Compare a call that computes gradients with eager: outputs, mutated inputs, and leaf gradients.

Each check runs every reference schedule, and the jitted function twice (first and cached call).
"""

from __future__ import annotations

import torch

import fusion_alias
from fusion_alias.backends.reference import SCHEDULES


def _as_tuple(x):
    return x if isinstance(x, tuple) else (x,)


def _loss(outs):
    """A loss weighting output i by i + 1 and each element by its position, so a lost or swapped
    cotangent shows."""
    total = 0
    for i, o in enumerate(outs):
        if isinstance(o, torch.Tensor) and o.requires_grad:
            weights = torch.arange(o.numel(), dtype=o.dtype).reshape(o.shape) + 1
            total = total + (i + 1) * (o * weights).sum()
    return total


def _run(fn, make_inputs):
    """(outputs detached, inputs detached after the call, leaves' gradients) of one call."""
    leaves, args = make_inputs()
    outs = _as_tuple(fn(*args))
    loss = _loss(outs)
    if isinstance(loss, torch.Tensor):
        loss.backward()
    detached = [o.detach().clone() if isinstance(o, torch.Tensor) else o for o in outs]
    return detached, [a.detach().clone() for a in args if isinstance(a, torch.Tensor)], [w.grad for w in leaves]


def assert_matches_eager(fn, make_inputs, *, calls=2):
    """``fusion_alias.jit(fn)`` gives eager's values, mutated inputs and gradients, on every schedule.

    ``make_inputs()`` returns (leaves whose gradients are compared, the call's arguments), fresh.
    """
    want = _run(fn, make_inputs)
    for schedule in SCHEDULES:
        jitted = fusion_alias.jit(fn, backend="reference", schedule=schedule)
        for _ in range(calls):
            got = _run(jitted, make_inputs)
            for g, w in zip(got[0], want[0]):
                torch.testing.assert_close(g, w)
            for g, w in zip(got[1], want[1]):
                torch.testing.assert_close(g, w)
            for g, w in zip(got[2], want[2]):
                assert (g is None) == (w is None), (schedule, g, w)
                if w is not None:
                    torch.testing.assert_close(g, w)


def _requires_grad_flags(out) -> list[bool]:
    return [o.requires_grad for o in _as_tuple(out)]


def assert_requires_grad_flags_match(fn, make_inputs, schedule: str, *, calls: int = 2) -> None:
    """Each output of ``fusion_alias.jit(fn)`` requires grad exactly where eager's does, on ``schedule``, for the
    first and the cached calls (``make_inputs()`` as for :func:`assert_matches_eager`)."""
    want = _requires_grad_flags(fn(*make_inputs()[1]))
    jitted = fusion_alias.jit(fn, backend="reference", schedule=schedule)
    for _ in range(calls):
        assert _requires_grad_flags(jitted(*make_inputs()[1])) == want


def assert_matches_eager_with_flags(fn, make_inputs, *, calls: int = 2) -> None:
    """:func:`assert_matches_eager`, and every output's ``requires_grad`` as eager's on every schedule."""
    assert_matches_eager(fn, make_inputs, calls=calls)
    for schedule in SCHEDULES:
        assert_requires_grad_flags_match(fn, make_inputs, schedule, calls=calls)


def assert_same_nested(got, want, where="") -> None:
    """``got`` equals ``want`` element by element: tensors by value (NaN equal to NaN), None only where
    ``want`` has None (a lost gradient is not a zero one), lists and tuples item by item, anything else by
    ``==``."""
    if isinstance(want, (list, tuple)):
        assert isinstance(got, (list, tuple)) and len(got) == len(want), (where, got, want)
        for i, (g, w) in enumerate(zip(got, want)):
            assert_same_nested(g, w, f"{where}[{i}]")
    elif isinstance(want, torch.Tensor):
        assert isinstance(got, torch.Tensor), (where, got, want)
        torch.testing.assert_close(got, want, equal_nan=True, msg=lambda m: f"{where}: {m}")
    else:
        assert got == want, (where, got, want)


def assert_runs_like_eager(fn, run, *run_args, calls: int = 2, compare=assert_same_nested) -> None:
    """``run(f, *run_args)`` (a test's own call: inputs, loss, what it returns) gives the same result for
    ``fusion_alias.jit(fn)`` on every reference schedule, first and cached calls, as for eager ``fn``:
    ``compare(got, want, where)`` passes (by default :func:`assert_same_nested`)."""
    want = run(fn, *run_args)
    for schedule in SCHEDULES:
        jitted = fusion_alias.jit(fn, backend="reference", schedule=schedule)
        for call in range(calls):
            compare(run(jitted, *run_args), want, f"{schedule} call {call}")
