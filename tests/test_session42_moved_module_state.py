"""A module's tensor rebound between calls under a name of the other kind (module_state.py, Note [state rebound between
calls]): ``m.u = m.b`` re-registers the buffer name ``u`` as a parameter tied to ``b``. The compiled program reads
``u`` from the ThunderModule's table of buffers, which kept the old buffer: every later call computed with it and
wrote into it, silently (fuzz modules ``--grad`` seed 36311 #37; plain ``thunder.jit`` too).
"""

from __future__ import annotations

import pytest
import torch

import fusion_alias
from fusion_alias.backends.reference import SCHEDULES


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.b = torch.nn.Parameter(torch.arange(4.0) / 4)
        self.register_buffer("u", torch.zeros(4))
        self.scale = torch.ones(4)

    def forward(self, a):
        with torch.no_grad():
            self.u.add_(self.scale)
        return a * self.scale, self.u, self.b * 2


REBINDS = {
    "buffer-to-a-tied-parameter": lambda m: setattr(m, "u", m.b),
    "buffer-to-a-new-parameter": lambda m: setattr(m, "u", torch.nn.Parameter(torch.full((4,), 5.0))),
    "attribute-to-a-parameter": lambda m: setattr(m, "scale", torch.nn.Parameter(torch.full((4,), 2.0))),
    "parameter-to-a-new-parameter": lambda m: setattr(m, "b", torch.nn.Parameter(torch.full((4,), 3.0))),
    "buffer-to-another-tensor": lambda m: setattr(m, "u", m.scale),
}


def _calls(module, call, rebind):
    """Outputs, their requires_grad flags, the parameters' gradients and the module's state, per call of three
    (the rebinding before the second)."""
    record = []
    for i in range(3):
        if i == 1:
            rebind(module)
        a = torch.ones(4, requires_grad=True)
        outs = call(a)
        loss = sum((o * (k + 1)).sum() for k, o in enumerate(outs) if o.requires_grad)
        loss.backward()
        record.append(([o.detach().clone() for o in outs], [o.requires_grad for o in outs],
                       [None if p.grad is None else p.grad.clone() for p in module.parameters()],
                       {n: t.detach().clone() for n, t in module.state_dict().items()}))
        for p in module.parameters():
            p.grad = None
    return record


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("kind", sorted(REBINDS))
def test_state_rebound_under_the_other_kind_matches_eager(kind, schedule):
    eager = Net()
    want = _calls(eager, eager, REBINDS[kind])
    module = Net()
    got = _calls(module, fusion_alias.jit(module, backend="reference", schedule=schedule), REBINDS[kind])
    for (g_outs, g_flags, g_grads, g_state), (w_outs, w_flags, w_grads, w_state) in zip(got, want):
        assert g_flags == w_flags
        for g, w in zip(g_outs, w_outs):
            torch.testing.assert_close(g, w)
        for g, w in zip(g_grads, w_grads):
            assert (g is None) == (w is None)
            if w is not None:
                torch.testing.assert_close(g, w)
        assert g_state.keys() == w_state.keys()
        for name in w_state:
            torch.testing.assert_close(g_state[name], w_state[name])
