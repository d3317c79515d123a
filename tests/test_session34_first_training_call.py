"""Session 34: a module whose parameters require grad, called with gradients on, compiles once
(module_state.py, Note [a module's parameters ask for gradients before compiling]); before, its first call
compiled without gradients until the fusion pass saw the parameters, then again with them (two compiles:
2.1 of the 4.8 s of an 8-block MLP's first training call)."""

import pytest
import thunder
import torch

import fusion_alias


class _Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 4)
        self.register_buffer("steps", torch.zeros(()))

    def forward(self, x):
        self.steps.add_(1)
        return x + self.fc(x).relu()


def _pair(seed=0):
    torch.manual_seed(seed)
    eager = torch.nn.Sequential(_Block(), _Block())
    torch.manual_seed(seed)
    jitted_model = torch.nn.Sequential(_Block(), _Block())
    return eager, jitted_model


@pytest.mark.parametrize("schedule", ["reads-first", "writes-first"])
def test_a_training_call_compiles_once_and_matches_eager(schedule):
    eager, model = _pair()
    jitted = fusion_alias.jit(model, backend="reference", schedule=schedule)
    misses = []
    for _ in range(3):
        x = torch.randn(2, 4)
        want = eager(x.clone())
        got = jitted(x.clone())
        torch.testing.assert_close(got, want)
        want.sum().backward()
        got.sum().backward()
        misses.append(thunder.cache_misses(jitted))
    # one compile for the first call (two before), one more once the parameters hold a .grad (guard.py, Note [a
    # leaf's .grad, None or not])
    assert misses == [1, 2, 2] and len(jitted._jitted) == 1, misses
    for (name, pe), (_, pj) in zip(eager.named_parameters(), model.named_parameters()):
        torch.testing.assert_close(pj.grad, pe.grad, msg=name)
    torch.testing.assert_close(model[0].steps, eager[0].steps)


def test_under_no_grad_it_compiles_without_gradients():
    _, model = _pair()
    jitted = fusion_alias.jit(model, backend="reference")
    with torch.no_grad():
        out = jitted(torch.randn(2, 4))
    assert not out.requires_grad
    assert jitted._with_grad[id(jitted._jitted[0])] is False


def test_frozen_parameters_compile_without_gradients():
    _, model = _pair()
    model.requires_grad_(False)
    jitted = fusion_alias.jit(model, backend="reference")
    out = jitted(torch.randn(2, 4))
    assert not out.requires_grad
    assert jitted._with_grad[id(jitted._jitted[0])] is False


@pytest.mark.parametrize("schedule", ["reads-first", "writes-first"])
def test_parameters_the_forward_does_not_read_change_nothing_eager_sees(schedule):
    """Compiled with gradients although the forward reads no parameter: the values, the written input and
    the result's ``requires_grad`` are eager's."""

    class Unused(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.ones(3))

        def forward(self, x):
            return x.mul_(2) + 1

    m = Unused()
    jitted = fusion_alias.jit(m, backend="reference", schedule=schedule)
    for _ in range(2):
        xe, xj = torch.arange(3.0), torch.arange(3.0)
        want, got = m(xe), jitted(xj)
        torch.testing.assert_close(got, want)
        torch.testing.assert_close(xj, xe)
        assert got.requires_grad == want.requires_grad
