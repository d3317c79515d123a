"""Session 38: eager's ``unbiased`` spelling of var, std, var_mean and std_mean (unbiased_spellings.py, Note
[unbiased is a correction]). ``x.var(0, unbiased=False)``, ``x.var(0, False)`` and ``x.var(False)``, which eager
runs, raised a TypeError here and in plain ``thunder.jit``; a call eager refuses (``unbiased`` beside
``correction``, a non-bool ``unbiased``, an integer tensor) is still refused, with eager's own error."""

import pytest
import torch

import fusion_alias
from helpers import assert_same, run_both

SCHEDULES = ("reads-first", "writes-first")

RUNS = {
    "var(False)": lambda x: x.var(False),
    "var(True)": lambda x: x.var(True),
    "var(0, False)": lambda x: x.var(0, False),
    "var(0, True, True)": lambda x: x.var(0, True, True),
    "var(None, False)": lambda x: x.var(None, False),
    "var((0, 1), False)": lambda x: x.var((0, 1), False),
    "var(0, False, keepdim=True)": lambda x: x.var(0, False, keepdim=True),
    "var(unbiased=False)": lambda x: x.var(unbiased=False),
    "var(dim=1, unbiased=False)": lambda x: x.var(dim=1, unbiased=False),
    "var(0, unbiased=False, keepdim=True)": lambda x: x.var(0, unbiased=False, keepdim=True),
    "std(False)": lambda x: x.std(False),
    "std(unbiased=True, dim=[0])": lambda x: x.std(unbiased=True, dim=[0]),
    "torch.var(x, False)": lambda x: torch.var(x, False),
    "torch.std(x, 1, False, True)": lambda x: torch.std(x, 1, False, True),
    "torch.var_mean(x, 1, False)": lambda x: torch.var_mean(x, 1, False),
    "torch.var_mean(x, unbiased=False)": lambda x: torch.var_mean(x, unbiased=False),
    "torch.std_mean(x, 0, unbiased=False, keepdim=True)": lambda x: torch.std_mean(x, 0, unbiased=False, keepdim=True),
    "torch.var(input=x, dim=0, unbiased=False)": lambda x: torch.var(input=x, dim=0, unbiased=False),
    # Thunder's own spellings go through unchanged
    "var(1)": lambda x: x.var(1),
    "var(0, correction=0, keepdim=True)": lambda x: x.var(0, correction=0, keepdim=True),
    "torch.var(x, dim=1, correction=2)": lambda x: torch.var(x, dim=1, correction=2),
}


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("name", list(RUNS))
def test_unbiased_spellings_run_as_eager(name, schedule):
    fn = RUNS[name]
    for dtype in (torch.float32, torch.float64, torch.float16, torch.complex64):
        x = torch.randn(3, 4, dtype=dtype, generator=torch.Generator().manual_seed(1))
        want = fn(x.clone())
        got = fusion_alias.jit(fn, backend="reference", schedule=schedule)(x.clone())
        want, got = (want, got) if isinstance(want, tuple) else ((want,), (got,))
        for g, w in zip(got, want):
            assert g.dtype == w.dtype and g.shape == w.shape
            torch.testing.assert_close(g, w, rtol=2e-3, atol=2e-3)


REFUSED = {
    "unbiased= with correction=": (lambda x: x.var(unbiased=False, correction=0), TypeError),
    "var(False, keepdim=True)": (lambda x: x.var(False, keepdim=True), TypeError),
    "var(0, 1)": (lambda x: x.var(0, 1), TypeError),
    "var(False, 0)": (lambda x: x.var(False, 0), TypeError),
    "unbiased=1": (lambda x: x.var(0, unbiased=1), TypeError),
    "an unknown keyword": (lambda x: x.var(0, unbiased=False, b=2), TypeError),
    "an integer tensor": (lambda x: x.long().var(unbiased=False), RuntimeError),
}


@pytest.mark.parametrize("name", list(REFUSED))
def test_what_eager_refuses_is_refused(name):
    fn, error = REFUSED[name]
    x = torch.randn(3, 4)
    with pytest.raises(error):
        fn(x.clone())
    with pytest.raises(error):
        fusion_alias.jit(fn, backend="reference")(x.clone())


def _batch_norm_step(x, running_mean, running_var):
    """A hand-written BatchNorm step: biased variance to normalize, unbiased into the running estimate."""
    mean = x.mean(0)
    var = x.var(0, unbiased=False)
    running_mean.mul_(0.9).add_(mean, alpha=0.1)
    running_var.mul_(0.9).add_(x.var(0, unbiased=True), alpha=0.1)
    return (x - mean) / torch.sqrt(var + 1e-5)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_a_batch_norm_step_with_running_stats_that_alias(schedule):
    """The running statistics are rows of the batch itself (``x[0]``, ``x[1]``) or separate buffers: the writes
    land in memory the normalization reads."""
    for make in (lambda b: (b, b[0], b[1]), lambda b: (b, b[0].clone(), b[1].clone() + 2)):
        _, got, want, state_jit, state_eager = run_both(_batch_norm_step, make, backend="reference",
                                                         schedule=schedule)
        assert_same(got, want, state_jit, state_eager)


def test_gradient_of_the_unbiased_spelling():
    x = torch.randn(4, 3, generator=torch.Generator().manual_seed(2))
    xe, xj = x.clone().requires_grad_(), x.clone().requires_grad_()
    fn = lambda t: (t.var(0, False) * torch.arange(3.0)).sum() + t.std(unbiased=True)  # noqa: E731
    fn(xe).backward()
    fusion_alias.jit(fn, backend="reference")(xj).backward()
    torch.testing.assert_close(xj.grad, xe.grad)
