"""Session 31: a write under ``torch.no_grad()`` into a tensor with a gradient path, where the tensor holds
infinities or NaN (no_grad_writes.py, Note [a no_grad write keeps the gradient path, exactly]; found by the
fuzzer's new ``--special-values`` inputs, seed 31042 #40, #41, #47 with ``--grad``).

Each program runs eagerly and jitted (both reference schedules) on fresh copies of the same inputs; the
outputs, the written tensor and every leaf's gradient are compared, NaN positions kept."""

import pytest
import torch

import fusion_alias

NAN, INF = float("nan"), float("inf")
SCHEDULES = ("reads-first", "writes-first")


def _add(x, w):
    with torch.no_grad():
        x.add_(0.25)
    return x * w


def _fill_view(x, w):
    y = x * 2
    with torch.no_grad():
        y.fill_(3.0)
    return y * w


def _sanitize(x, w):
    with torch.no_grad():
        x[x.isinf()] = 0.0  # the mask is computed from x: a NaN in x made it all False
    return x * w


def _row(x, w):
    with torch.no_grad():
        x[1:].mul_(0.5)
    return (x * w).sum(0, keepdim=True) * x


def _copy_in(x, w):
    with torch.no_grad():
        x.copy_(w * 3)
    return x * w


def _twice(x, w):
    x.mul_(w)
    with torch.no_grad():
        x.clamp_(-2.0, 2.0)
    return x + w


PROGRAMS = {f.__name__.strip("_"): f for f in (_add, _fill_view, _sanitize, _row, _copy_in, _twice)}
VALUES = {
    torch.float32: [1.0, INF, -INF, NAN, -0.0, 2.5],
    torch.float64: [1.0, INF, -INF, NAN, -0.0, 2.5],
    torch.float16: [1.0, INF, -INF, NAN, -0.0, 2.5],
    torch.bfloat16: [1.0, INF, -INF, NAN, -0.0, 2.5],
}


def _run(fn, dtype, schedule, leaf_requires_grad=True):
    got = []
    for jitted in (False, True):
        leaf = torch.tensor(VALUES[dtype], dtype=dtype).reshape(3, 2).requires_grad_(leaf_requires_grad)
        w = torch.tensor([[2.0, -1.0]] * 3, dtype=dtype).requires_grad_()
        x = leaf * 1
        f = fusion_alias.jit(fn, backend="reference", schedule=schedule) if jitted else fn
        out = f(x, w)
        out.float().sum().backward()
        got.append((out.detach(), x.detach(), leaf.grad, w.grad))
    return got


def _same(a, b):
    if a is None or b is None:
        return a is None and b is None
    return a.dtype == b.dtype and torch.allclose(a.float(), b.float(), equal_nan=True, rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("dtype", list(VALUES), ids=str)
@pytest.mark.parametrize("name", list(PROGRAMS))
def test_no_grad_write_into_non_finite_values(name, dtype, schedule):
    eager, jit = _run(PROGRAMS[name], dtype, schedule)
    for what, e, j in zip(("output", "written tensor", "leaf grad", "w grad"), eager, jit):
        assert _same(j, e), f"{name} {dtype}: {what} differs: eager {e}, fusion_alias {j}"


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_written_tensor_without_gradient_path(schedule):
    """The written tensor needs no gradient (only ``w`` does): Thunder's autodiff treats the write as a
    constant and the copy it decomposes into runs."""
    eager, jit = _run(_add, torch.float32, schedule, leaf_requires_grad=False)
    for e, j in zip(eager, jit):
        assert _same(j, e)
