"""Session 45 (helper-73): a buffer rebound to a view of itself made in the call (``self.u = self.u.view(3)``,
``self.u[:]``, ``self.u.detach()``) in a call that computes gradients stayed the object it was, where eager's is a new
tensor object over the same memory: the functionalized epilogue dropped the store as one of the buffer onto itself
(``self.n += 1``), and session 44's fix (epilogue_stores.py, Note [a view stored over the buffer it views]) covered
calls without gradients only. Found by the fuzzer's new form (fuzz/modules_view_rebinds.py) with ``--grad``: modules
seed 45204 #6, ``m.u = m.u.view(3)`` on a module read from a global. Fixed in functionalized_epilogue.py (Note [a view of
a buffer stored onto it, functionalized]). Each program runs three calls against eager on fresh modules, the module
called, a module passed as an argument and one read from a global, with an input that requires grad: outputs, the
input's gradient, every buffer after each call, whether it is the object it was and whether it shares the memory.
The 9 tests with ``grad`` True fail on bc6b4d3 (checked); the 9 without pass there too.
"""

import pytest
import torch
import torch.nn as nn

import fusion_alias
from fusion_alias.backends.reference import SCHEDULES


class Net(nn.Module):
    def __init__(self, program):
        super().__init__()
        self.program = program
        flat = torch.arange(1.0, 8.0)
        self.flat = nn.Parameter(flat, requires_grad=False)
        self.register_buffer("u", flat[4:7])  # (a view of the flat parameter's memory)
        self.register_buffer("steps", torch.zeros(()))

    def forward(self, x):
        return self.program(self, x)


def view_of_itself(m, x):
    m.u = m.u.view(3)
    return x * m.u


def slice_of_itself(m, x):
    m.u = m.u[:]
    return x + m.u


def detach_of_itself_after_a_write(m, x):
    m.u.add_(1)
    m.u = m.u.detach()
    return x * m.u


PROGRAMS = [view_of_itself, slice_of_itself, detach_of_itself_after_a_write]
MOD = None


def through_a_global(x):
    return MOD.program(MOD, x)


def as_an_argument(m, x):
    return m.program(m, x)


def _calls(program, entry, grad, jit_schedule=None):
    global MOD
    m = Net(program)
    MOD = m
    fn = {"self": m, "global": through_a_global, "arg": as_an_argument}[entry]
    if jit_schedule is not None:
        fn = fusion_alias.jit(fn, backend="reference", schedule=jit_schedule)
    facts = []
    for call in range(3):
        leaf = torch.full((3,), float(call + 1), requires_grad=grad)
        before = m.u
        out = fn(m, leaf * 1) if entry == "arg" else fn(leaf * 1)
        if grad:
            out.sum().backward()
        facts.append((out.detach().clone(), None if leaf.grad is None else leaf.grad.clone(), m.u.clone(),
                      m.u is before, m.u.data_ptr() == m.flat.data_ptr() + 4 * m.flat.element_size(), m.u.requires_grad))
    return facts


@pytest.mark.parametrize("grad", [True, False])
@pytest.mark.parametrize("entry", ["self", "arg", "global"])
@pytest.mark.parametrize("program", PROGRAMS)
def test_the_buffer_is_a_new_view_as_in_eager(program, entry, grad):
    want = _calls(program, entry, grad)
    got = _calls(program, entry, grad, SCHEDULES[0])
    for call, (g, w) in enumerate(zip(got, want)):
        for a, b in zip(g[:3], w[:3]):
            torch.testing.assert_close(a, b, msg=f"call {call}")
        assert g[3:] == w[3:], (call, "kept the object, shares the memory, requires grad:", g[3:], "eager:", w[3:])
