"""The same tensor passed twice is one memory (issue 11: tied parameters).

Note [the same tensor passed twice is one memory] (``input_groups.py``): reads of
one name after a write through the other read the written value, both writes
land in one write-back, and the program takes one region. Every check compares
with eager on fresh inputs, outputs and mutated inputs, under every reference
schedule, on first and cached calls, and with the aliasing changed between calls.
"""

import pytest
import torch

import fusion_alias
from fusion_alias.backends.reference import SCHEDULES
from fusion_alias.bench.programs import SUITE


def _twice(x, y):
    x.add_(1)
    y.add_(1)
    return x * 2


def _read_other_name(x, y):
    x.mul_(2)
    r = y + 1  # reads the doubled values when y is x
    y.sub_(x)  # zero when y is x
    return r


def _arange(n=6):
    return torch.arange(float(n)) - 2


@pytest.mark.parametrize("fn", [_twice, _read_other_name])
@pytest.mark.parametrize("schedule", SCHEDULES)
def test_same_tensor_twice_is_one_region_and_matches_eager(fn, schedule):
    jitted = fusion_alias.jit(fn, backend="reference", schedule=schedule)
    for _ in range(2):
        got, want = _arange(), _arange()
        torch.testing.assert_close(jitted(got, got), fn(want, want))
        torch.testing.assert_close(got, want)
        assert len(fusion_alias.regions(jitted)) == 1


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_aliasing_changes_between_calls(schedule):
    """same tensor -> independent -> transposed -> a shifted view -> same tensor again."""
    jitted = fusion_alias.jit(_read_other_name, backend="reference", schedule=schedule)
    base = torch.arange(16.0).reshape(4, 4) - 5
    makes = [
        lambda b: (b, b),
        lambda b: (b, b.clone() + 1),
        lambda b: (b, b.t()),
        lambda b: (b[0:2], b[1:3]),
        lambda b: (b, b),
    ]
    for make in makes:
        got_b, want_b = base.clone(), base.clone()
        try:
            want = _read_other_name(*make(want_b))
        except RuntimeError:  # eager rejects it: so must we
            with pytest.raises(RuntimeError):
                jitted(*make(got_b))
            continue
        torch.testing.assert_close(jitted(*make(got_b)), want)
        torch.testing.assert_close(got_b, want_b)


def test_same_storage_but_another_layout_is_not_merged():
    """(x, x.t()) is not the same tensor: it keeps the hazard cuts (more than one region)."""
    jitted = fusion_alias.jit(_twice, backend="reference")
    got, want = torch.arange(9.0).reshape(3, 3), torch.arange(9.0).reshape(3, 3)
    torch.testing.assert_close(jitted(got, got.t()), _twice(want, want.t()))
    torch.testing.assert_close(got, want)
    assert len(fusion_alias.regions(jitted)) > 1


@pytest.mark.parametrize("name", ["sgd_8_tied", "ema_8_tied", "adam_8_tied"])
@pytest.mark.parametrize("schedule", SCHEDULES)
def test_tied_optimizer_steps_take_one_region(name, schedule):
    prog = next(p for p in SUITE if p.name == name)
    jitted = fusion_alias.jit(prog.fn, backend="reference", schedule=schedule)
    for seed in range(2):
        got, want = prog.make_inputs(seed), prog.make_inputs(seed)
        jitted(*got)
        prog.fn(*want)
        for g, w in zip(got, want):
            for a, b in zip(g, w):
                torch.testing.assert_close(a, b)
    assert len(fusion_alias.regions(jitted)) == 1


def _product(x, y):
    return (x * y).sum()


def test_two_leaves_over_one_memory_keep_their_gradients():
    """w and a leaf sharing w's memory (w.detach().requires_grad_()) are not one input: renaming one
    to the other would send both gradients to one of them."""
    w = torch.arange(4.0, requires_grad=True)
    v = w.detach().requires_grad_()
    jitted = fusion_alias.jit(_product, backend="reference")
    jitted(w, v).backward()
    torch.testing.assert_close(w.grad, v.detach())
    torch.testing.assert_close(v.grad, w.detach())
    w2 = torch.arange(4.0, requires_grad=True)
    fusion_alias.jit(_product, backend="reference")(w2, w2).backward()
    torch.testing.assert_close(w2.grad, 2 * w2.detach())


def test_same_memory_one_requiring_grad_is_not_merged():
    """(w, w.detach()): eager sends a gradient through w only."""
    w = torch.arange(4.0, requires_grad=True)
    jitted = fusion_alias.jit(_product, backend="reference")
    jitted(w, w.detach()).backward()
    torch.testing.assert_close(w.grad, w.detach())
