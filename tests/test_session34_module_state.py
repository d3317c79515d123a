"""Session 34: ``module_state.named_state`` names a module's tensors as torch's ``named_buffers`` and
``named_parameters(remove_duplicate=False)`` do, in one walk (module_state.py, Note [the module's tensors named in
one walk]), and the rebound-state walk that uses it still follows a tensor rebound between calls."""

import torch

import fusion_alias
from fusion_alias.module_state import named_state


class _Odd(torch.nn.Module):
    """Names its parameters its own way: the tree it is in is asked through torch's methods."""

    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.ones(2))

    def named_parameters(self, *args, **kwargs):
        yield from ()


def _net():
    shared = torch.nn.Linear(2, 2)

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = shared, shared
            self.seq = torch.nn.Sequential(torch.nn.Linear(2, 3, bias=False), torch.nn.BatchNorm1d(3), torch.nn.ReLU())
            self.ml = torch.nn.ModuleList([torch.nn.LayerNorm(3), torch.nn.Identity()])
            self.md = torch.nn.ModuleDict({"x": torch.nn.Conv1d(1, 1, 1)})
            self.register_buffer("none_buf", None)
            self.register_parameter("none_p", None)
            self.register_buffer("kv", torch.zeros(2))
            self.register_buffer("scratch", torch.zeros(1), persistent=False)
            self.w = torch.nn.Parameter(torch.ones(1))
            self._modules["empty"] = None

    return Net()


def _ids(pairs):
    return [(name, id(t)) for name, t in pairs]


def test_named_state_is_torchs_naming():
    for m in (_net(), torch.nn.Linear(2, 2), torch.nn.Sequential(), torch.nn.Sequential(_net(), _Odd()), _Odd()):
        buffers, parameters = named_state(m)
        assert _ids(buffers) == _ids(m.named_buffers(remove_duplicate=False))
        assert _ids(parameters) == _ids(m.named_parameters(remove_duplicate=False))


def test_a_buffer_and_a_parameter_rebound_between_calls_are_read():
    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("kv", torch.zeros(3))
            self.inner = torch.nn.Linear(3, 3)

        def forward(self, x):
            self.kv.add_(x)
            return self.inner(self.kv)

    torch.manual_seed(0)
    eager = Net()
    torch.manual_seed(0)
    model = Net()
    jitted = fusion_alias.jit(model, backend="reference")
    with torch.no_grad():
        for call in range(3):
            if call == 1:
                eager.kv = torch.full((3,), 5.0)
                model.kv = torch.full((3,), 5.0)
                eager.inner.weight = torch.nn.Parameter(torch.eye(3))
                model.inner.weight = torch.nn.Parameter(torch.eye(3))
            x = torch.randn(3)
            torch.testing.assert_close(jitted(x), eager(x))
            torch.testing.assert_close(model.kv, eager.kv)
