"""Writes into non-leaf inputs that require grad: run on a clone, written back in eager.

Written inputs that require grad: functionalized, written back in eager (autograd_functionalize.py).
Values, mutated inputs and gradients are compared with eager, on every schedule,
first and cached call; the caller's use of the written input after the call too.
"""

from __future__ import annotations

import pytest
import torch

import fusion_alias
from fusion_alias.backends.reference import SCHEDULES
from tests.grad_helpers import assert_matches_eager


def _non_leaf_inputs(n=2, shape=(3, 3)):
    def make():
        g = torch.Generator().manual_seed(0)
        ws = [torch.randn(*shape, generator=g).requires_grad_() for _ in range(n)]
        return ws, [w * 1 for w in ws]

    return make


def write_then_read(a, b):
    a.add_(1)
    return a * b


def write_and_return_it(a, b):
    a.mul_(2)
    return a


def two_inputs_written(a, b):
    a.add_(b)
    b.mul_(2)
    return a * b


def written_twice(a, b):
    a.add_(b)
    a.mul_(3)
    return a.sum(0) + b


@pytest.mark.parametrize("fn", [write_then_read, write_and_return_it, two_inputs_written, written_twice])
def test_write_into_a_non_leaf_grad_input_matches_eager(fn):
    assert_matches_eager(fn, _non_leaf_inputs())


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_the_written_input_carries_eagers_history_after_the_call(schedule):
    def run(f):
        [w, v], [a, b] = _non_leaf_inputs()()
        out = f(a, b)
        ((out * 2).sum() + (a * a).sum()).backward()  # the caller reads the written a afterwards
        return out.detach(), a.detach(), w.grad, v.grad

    want = run(write_then_read)
    jitted = fusion_alias.jit(write_then_read, backend="reference", schedule=schedule)
    for _ in range(2):
        for g, e in zip(run(jitted), want):
            torch.testing.assert_close(g, e)


def test_disjoint_inputs_sharing_a_storage_match_eager():
    # two disjoint halves of one buffer: separate memories, each written back in eager
    def make():
        w = torch.randn(4, 3, generator=torch.Generator().manual_seed(0), requires_grad=True)
        base = w * 1
        return [w], [base[:2], base[2:]]

    assert_matches_eager(write_then_read, make)


def test_leaf_write_still_gets_eagers_error():
    with pytest.raises(fusion_alias.AliasInputError, match="leaf Variable"):
        fusion_alias.jit(write_then_read, backend="reference")(torch.ones(3, requires_grad=True), torch.ones(3))


def test_without_gradients_the_regions_write_in_place():
    # no functionalization without gradients: the region writes the input, no clone, no write-back
    import thunder

    jitted = fusion_alias.jit(write_then_read, backend="reference")
    a, b = torch.ones(3), torch.ones(3)
    jitted(a, b)
    assert torch.equal(a, torch.full((3,), 2.0))
    trace = str(thunder.last_traces(jitted)[-1])
    assert "clone" not in trace and "index_copy" not in trace
