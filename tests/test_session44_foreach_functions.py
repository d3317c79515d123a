"""Session 44: the out-of-place ``torch._foreach_add`` and ``torch._foreach_mul`` (torch.optim's foreach Adam and SGD
with weight decay call ``torch._foreach_add(grads, params, alpha=weight_decay)``) failed while tracing with "add():
argument 'input' (position 1) must be Tensor, not TensorProxy": the foreach lookaside called the real ``torch.add`` on
proxies (inplace_lookasides.py, Note [a method sent to torch, called outside the interpreter]). Checked against eager on
fresh inputs: results, every list entry after the call, leaf gradients, every reference schedule, first and cached
call; inputs independent, views of one flat buffer, overlapping views, one tensor twice.
"""

import importlib

import pytest
import torch

import fusion_alias
from fusion_alias.backends.reference import SCHEDULES
from tests.grad_helpers import assert_matches_eager

adam = importlib.import_module("torch.optim.adam").adam
sgd = importlib.import_module("torch.optim.sgd").sgd


def add_alpha(xs, ys):
    return torch._foreach_add(xs, ys, alpha=0.5)


def mul_number(xs, ys):
    return torch._foreach_mul(xs, 2.0)


def mul_lists_then_write(xs, ys):
    r = torch._foreach_mul(xs, ys)
    torch._foreach_add_(ys, r, alpha=-0.1)
    return r


def _lists(layout: str, seed: int):
    g = torch.Generator().manual_seed(seed)
    flat = torch.randn(12, generator=g)
    if layout == "independent":
        return [flat[:4].clone(), flat[4:8].clone()], [flat[8:].clone(), flat[:4].clone()]
    if layout == "views":
        return [flat[:4], flat[4:8]], [flat[8:], flat[:4]]  # ys[1] is xs[0]'s memory
    if layout == "overlapping":
        return [flat[:4], flat[2:6]], [flat[6:10], flat[8:]]
    return [flat[:4], flat[:4]], [flat[4:8], flat[4:8]]  # one tensor twice in each list


LAYOUTS = ["independent", "views", "overlapping", "same"]


def _state(xs, ys):
    return [t.clone() for t in (*xs, *ys)]


@pytest.mark.parametrize("fn", [add_alpha, mul_number, mul_lists_then_write])
@pytest.mark.parametrize("schedule", SCHEDULES)
def test_out_of_place_foreach_runs_like_eager(fn, schedule):
    jitted = fusion_alias.jit(fn, backend="reference", schedule=schedule)
    for seed, layout in enumerate(LAYOUTS + LAYOUTS[:2]):  # (a layout seen before: a cached program)
        want_args, got_args = _lists(layout, seed), _lists(layout, seed)
        want, got = fn(*want_args), jitted(*got_args)
        assert isinstance(got, tuple) and len(got) == len(want)
        for g, w in zip(got, want):
            torch.testing.assert_close(g, w)
        for g, w in zip(_state(*got_args), _state(*want_args)):
            torch.testing.assert_close(g, w)


def mul_then_write_the_other(xs, ys):
    r = torch._foreach_mul(xs, 2.0)  # (saves nothing of ys: eager's backward runs)
    torch._foreach_add_(ys, r, alpha=-0.1)
    return (*r, *ys)  # (every leaf reaches the loss: eager's gradients are tensors, not None)


def _leaves_and_lists():
    torch.manual_seed(0)
    leaves = [torch.randn(4, requires_grad=True) for _ in range(3)]
    return leaves, ([leaves[0] * 1, leaves[1] * 1], [leaves[2] * 1, leaves[0] * 2])


@pytest.mark.parametrize("fn", [add_alpha, mul_number, mul_then_write_the_other])
def test_out_of_place_foreach_gradients(fn):
    assert_matches_eager(fn, _leaves_and_lists)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_a_write_into_what_foreach_mul_saved_is_rejected_with_gradients(schedule):
    """``_foreach_mul(xs, ys)`` saves ``ys`` for its backward; the ``_foreach_add_`` into ``ys`` after it makes
    eager's backward raise. fusion_alias raises too (refusals/saved_versions.py), not a gradient."""
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        _, args = _leaves_and_lists()
        sum(r.sum() for r in mul_lists_then_write(*args)).backward()
    jitted = fusion_alias.jit(mul_lists_then_write, backend="reference", schedule=schedule)
    with pytest.raises(Exception, match="saves|modified by an inplace operation"):
        _, args = _leaves_and_lists()
        sum(r.sum() for r in jitted(*args)).backward()


def adam_step(params, grads, exp_avgs, exp_avg_sqs, steps):
    adam(params, grads, exp_avgs, exp_avg_sqs, [], steps, foreach=True, amsgrad=False, beta1=0.9, beta2=0.99,
         lr=0.1, weight_decay=0.01, eps=1e-8, maximize=False)
    return params[0].sum()


def sgd_step(params, grads, bufs):
    sgd(params, grads, bufs, foreach=True, weight_decay=0.1, momentum=0.9, lr=0.1, dampening=0.0, nesterov=True,
        maximize=False)
    return params[1] * 1


def _adam_inputs(layout: str, seed: int):
    g = torch.Generator().manual_seed(seed)
    flat = torch.randn(32, generator=g)
    params = {"independent": [flat[:16].clone(), flat[16:].clone()], "views": [flat[:16], flat[16:]],
              "overlapping": [flat[:16], flat[8:24]], "same": [flat[:16], flat[:16]]}[layout]
    grads = [torch.randn(16, generator=g) for _ in range(2)]
    return flat, (params, grads, [torch.zeros(16), torch.zeros(16)], [torch.zeros(16), torch.zeros(16)],
                  [torch.tensor(0.0), torch.tensor(0.0)])


def _sgd_inputs(layout: str, seed: int):
    flat, (params, grads, bufs, _, _) = _adam_inputs(layout, seed)
    return flat, (params, grads, [b + 1 for b in bufs])


@pytest.mark.parametrize("step, inputs", [(adam_step, _adam_inputs), (sgd_step, _sgd_inputs)])
@pytest.mark.parametrize("schedule", SCHEDULES)
def test_torch_optim_foreach_step_with_weight_decay(step, inputs, schedule):
    jitted = fusion_alias.jit(step, backend="reference", schedule=schedule)
    for seed, layout in enumerate(LAYOUTS + ["independent"]):
        (want_flat, want_args), (got_flat, got_args) = inputs(layout, seed), inputs(layout, seed)
        torch.testing.assert_close(jitted(*got_args), step(*want_args))
        torch.testing.assert_close(got_flat, want_flat)  # the parameters' memory
        for got_list, want_list in zip(got_args[1:], want_args[1:]):
            for g, w in zip(got_list, want_list):
                torch.testing.assert_close(g, w)
