"""Session 36 (helper): a foreach op given an empty list raises eager's "Tensor list must have at least one
tensor." (foreach_lookasides.py, Note [an empty foreach list]); one op per tensor in turn ran nothing and returned, a
missed rejection (plain ``thunder.jit`` raises its own error)."""

import pytest
import torch

import fusion_alias

SCHEDULES = ("reads-first", "writes-first")
CALLS = {
    "mul_ number": lambda x: torch._foreach_mul_([], 2.0),
    "add_ lists": lambda x: torch._foreach_add_([], [], alpha=2),
    "add tuple": lambda x: torch._foreach_add((), 1.0),
    "zero_": lambda x: torch._foreach_zero_([]),
    "lerp_": lambda x: torch._foreach_lerp_([], [], 0.5),
    "addcmul_": lambda x: torch._foreach_addcmul_([], [], [], 2),
    "pow of a number": lambda x: torch._foreach_pow(2.0, []),
    "neg": lambda x: torch._foreach_neg([]),
}


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("call", list(CALLS))
def test_an_empty_foreach_list_raises_eagers_error(call, schedule):
    def f(x):
        x.mul_(2)
        CALLS[call](x)
        return x

    with pytest.raises(RuntimeError, match="Tensor list must have at least one tensor"):
        f(torch.ones(3))
    with pytest.raises(RuntimeError, match="Tensor list must have at least one tensor"):
        fusion_alias.jit(f, schedule=schedule)(torch.ones(3))


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_a_foreach_list_of_one_view_still_runs(schedule):
    def f(x):
        torch._foreach_add_([x[0], x[1:]], 1.0)
        return x * 1, torch._foreach_pow(2.0, [x[0]])[0]

    got, want = fusion_alias.jit(f, schedule=schedule)(torch.ones(3, 2)), f(torch.ones(3, 2))
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w)
