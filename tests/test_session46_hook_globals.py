"""Session 46: a tensor the program reaches only through a module hook's function (input_groups.py, Note [a prologue
that cannot read what was traced]). Thunder's prologue reads the hook dicts on the ThunderModule, which holds none,
and raised a bare ``KeyError: 0`` (``KeyError: 9002`` on fuzz modules seed 36315 #2, whose hook dict is replaced
between calls). It is a NotImplementedError now that shows the prologue's failing lines; a hook that reaches nothing
outside its arguments still runs as eager's, in every call, under both reference schedules."""

import collections

import pytest
import torch

import fusion_alias

SCHEDULES = ["reads-first", "writes-first"]

COUNTER = torch.zeros(4)


def _count_and_negate(mod, args):
    COUNTER.add_(1)
    return (-args[0],)


def _negate(mod, args):
    return (-args[0],)


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("u", torch.zeros(4))

    def forward(self, a):
        self.u.add_(a)
        return a * 2


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_hook_reaching_a_global_is_a_clear_error(schedule):
    m = Net()
    m.register_forward_pre_hook(_count_and_negate)
    f = fusion_alias.jit(m, backend="reference", schedule=schedule)
    with pytest.raises(NotImplementedError, match=r"prologue cannot read(.|\n)*_forward_pre_hooks(.|\n)*hook's function"):
        f(torch.ones(4))


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_hook_dict_replaced_with_a_hook_reaching_a_global(schedule):
    m = Net()
    f = fusion_alias.jit(m, backend="reference", schedule=schedule)
    assert torch.equal(f(torch.ones(4)), torch.full((4,), 2.0))
    m._forward_pre_hooks = collections.OrderedDict({9002: _count_and_negate})
    with pytest.raises(NotImplementedError, match=r"KeyError: 9002(.|\n)*obj\d+\[9002\]"):
        f(torch.ones(4))


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_hook_reaching_nothing_else_still_runs(schedule):
    want, got = Net(), Net()
    f = fusion_alias.jit(got, backend="reference", schedule=schedule)
    for call in range(3):
        if call == 1:
            for m in (want, got):
                m._forward_pre_hooks = collections.OrderedDict({9002: _negate})
        x = torch.arange(4.0)
        expected = want(x.clone())
        torch.testing.assert_close(f(x.clone()), expected)
        torch.testing.assert_close(got.u, want.u)
