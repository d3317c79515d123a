"""Session 33 probe: what a program asks of a plain object it was given as an argument.

The arguments' guard key covers their plain tuples, lists and dicts, not the attributes of an object among
them, and Thunder's prologue checks the attributes the program read, not one it found missing: ``o.count =
getattr(o, "count", 0) + 1`` compiled ``o.count = 1`` into the epilogue and kept setting 1 at every later call
(plain ``thunder.jit`` too). An argument object's attribute names are now recorded as any other object's
(outside_reads.py, Note [an argument object's attribute names]). Each test writes its tensor argument in place
and compares outputs, the written tensor and the object's state with eager at every call, under both schedules."""

import pytest
import torch

import fusion_alias

SCHEDULES = ("reads-first", "writes-first")


class _State:
    pass


def _counts_with_a_default(x, o):
    o.count = getattr(o, "count", 0) + 1
    x.mul_(2)
    return x * o.count


def _initialises_lazily(x, o):
    if not hasattr(o, "scale"):
        o.scale = 3.0
        return x.add_(1)
    return x.mul_(o.scale)


def _branches_on_a_missing_attribute(x, o):
    x.sub_(1)
    return x + o.bias if hasattr(o, "bias") else x * 2


def _state_after(fn, schedule, states):
    jitted = fusion_alias.jit(fn, backend="reference", schedule=schedule)
    o_e, o_j = _State(), _State()
    for change in states:
        change(o_e)
        change(o_j)
        x_e, x_j = torch.arange(3.0), torch.arange(3.0)
        expected, got = fn(x_e, o_e), jitted(x_j, o_j)
        torch.testing.assert_close(got, expected, rtol=0, atol=0)
        torch.testing.assert_close(x_j, x_e, rtol=0, atol=0)
        assert {k: v for k, v in vars(o_j).items()} == {k: v for k, v in vars(o_e).items()}


def _nothing(o):
    pass


def _set_bias(o):
    o.bias = 5.0


def _drop_bias(o):
    if hasattr(o, "bias"):
        del o.bias


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_a_counter_with_a_default(schedule):
    _state_after(_counts_with_a_default, schedule, [_nothing] * 4)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_lazy_initialisation_on_an_argument_object(schedule):
    _state_after(_initialises_lazily, schedule, [_nothing] * 3)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_an_attribute_set_and_removed_between_calls(schedule):
    _state_after(_branches_on_a_missing_attribute, schedule, [_nothing, _set_bias, _nothing, _drop_bias, _set_bias])
