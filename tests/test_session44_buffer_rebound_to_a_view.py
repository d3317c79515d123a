"""Session 44: a buffer rebound to a view made in the call (``self.run_mean = self.b.detach()``) where the buffer is
already that memory (the caller set ``m.run_mean = m.b``) is a new tensor object after the call, as in eager; it
stayed the old object (``m.run_mean is m.b``), because the store keeps a value with the buffer's memory and layout
(an in-place result, ``self.steps += 1``, which must keep the object). Modules fuzz 36315 #25, left by session 43
(epilogue_stores.py, Note [a view stored over the buffer it views]). Each program runs three calls against eager on
fresh modules, the module called and a module passed as an argument: outputs, every buffer after each call, and
whether each buffer is the object it was and the object of the other buffer.
"""

import pytest
import torch
import torch.nn as nn

import fusion_alias
from fusion_alias.backends.reference import SCHEDULES


class Called(nn.Module):
    def __init__(self, program):
        super().__init__()
        self.program = program
        self.register_buffer("b", torch.tensor([1.0, 2.0, 3.0, 4.0]))
        self.register_buffer("run_mean", torch.zeros(4))
        self.register_buffer("steps", torch.zeros(()))

    def forward(self, x):
        return self.program(self, x)


def detach_of_the_same_tensor(m, x):
    m.run_mean = m.b.detach()
    return x * m.run_mean


def view_of_itself(m, x):
    m.run_mean = m.run_mean.view(4)
    return x + m.run_mean


def slice_of_the_whole(m, x):
    m.run_mean = m.b[:]
    return x * 2 + m.run_mean


def in_place_result_keeps_the_object(m, x):
    m.steps += 1
    m.run_mean = m.run_mean  # (the buffer itself: eager keeps it)
    return x * m.steps + m.run_mean


PROGRAMS = [detach_of_the_same_tensor, view_of_itself, slice_of_the_whole, in_place_result_keeps_the_object]


def _module(program, already_b: bool):
    m = Called(program)
    if already_b:
        m.run_mean = m.b  # (a buffer rebound by the caller: both names, one tensor object)
    return m


def _facts(m, before: dict) -> list:
    return [(name, t.clone(), t is before[name], t is m.b) for name, t in m._buffers.items()]


def _compare(got: list, want: list) -> None:
    for (name, g, g_same, g_b), (_, w, w_same, w_b) in zip(got, want):
        torch.testing.assert_close(g, w, msg=name)
        assert (g_same, g_b) == (w_same, w_b), (name, "object kept, is m.b:", (g_same, g_b), "eager:", (w_same, w_b))


@pytest.mark.parametrize("already_b", [True, False])
@pytest.mark.parametrize("program", PROGRAMS)
@pytest.mark.parametrize("schedule", SCHEDULES)
def test_the_module_called(program, already_b, schedule):
    want_m, got_m = _module(program, already_b), _module(program, already_b)
    jitted = fusion_alias.jit(got_m, backend="reference", schedule=schedule)
    for call in range(3):
        x = torch.full((4,), float(call + 1))
        want_before, got_before = dict(want_m._buffers), dict(got_m._buffers)  # (named_buffers() skips one object twice)
        torch.testing.assert_close(jitted(x), want_m(x))
        _compare(_facts(got_m, got_before), _facts(want_m, want_before))


def given(m, x):
    m.run_mean = m.b.detach()
    return x * m.run_mean


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_a_module_the_call_was_given(schedule):
    jitted = fusion_alias.jit(given, backend="reference", schedule=schedule)
    want_m, got_m = _module(None, True), _module(None, True)
    for call in range(3):
        x = torch.full((4,), float(call + 1))
        want_before, got_before = dict(want_m._buffers), dict(got_m._buffers)  # (named_buffers() skips one object twice)
        torch.testing.assert_close(jitted(got_m, x), given(want_m, x))
        _compare(_facts(got_m, got_before), _facts(want_m, want_before))
