"""``Tensor.data`` in compiled functions (fusion_alias/data_attribute.py, Note [Tensor.data as detach])."""

import pytest
import thunder
import torch

import fusion_alias
from fusion_alias.backends.reference import SCHEDULES


def _ema(e, p):
    e.data.mul_(0.9).add_(p.data, alpha=0.1)
    return e * 1


def _sgd(p, g):
    p.data.add_(g, alpha=-0.1)
    return p.sum()


def _add_own_scaled(p, g):
    p.data.add_(p.data * 0.5 + g)
    return p * 2


def _clamp_then_read_a_view(p, g):
    p.data.clamp_(-0.2, 0.2)
    return p[1:] + g[1:]


def _inputs():
    p = torch.linspace(-1.0, 1.0, 6)
    return [p, torch.linspace(0.5, -0.5, 6)]


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("prog", [_ema, _sgd, _add_own_scaled, _clamp_then_read_a_view])
def test_data_writes_the_tensors_memory_as_eager(prog, schedule):
    want_args, got_args = _inputs(), _inputs()
    want = prog(*want_args)
    got = fusion_alias.jit(prog, backend="reference", schedule=schedule)(*got_args)
    torch.testing.assert_close(got, want)
    torch.testing.assert_close(got_args, want_args)


def test_data_of_parameters_under_no_grad():
    # an optimizer step over parameters that require grad, under torch.no_grad(): no autodiff is built
    ps = [torch.nn.Parameter(torch.linspace(-1.0, 1.0, 4)) for _ in range(2)]
    qs = [torch.nn.Parameter(p.detach().clone()) for p in ps]
    gs = [torch.ones(4), torch.full((4,), 2.0)]

    def step(params, grads):
        for p, g in zip(params, grads):
            p.data.add_(g, alpha=-0.1)
        return params[0] * 1

    with torch.no_grad():
        want = step(ps, gs)
        got = fusion_alias.jit(step)(qs, gs)
    torch.testing.assert_close(got, want)
    torch.testing.assert_close(qs, ps)


def test_data_in_a_call_that_computes_gradients_is_refused():
    # eager computes w.grad from the values written through .data (cos(2 y)), unnoticed by autograd
    def prog(w):
        y = w * 1
        z = y.sin()
        y.data.mul_(2)
        return z

    with pytest.raises(NotImplementedError, match=r"Tensor\.data .* computes gradients .*\.detach\(\)"):
        fusion_alias.jit(prog)(torch.rand(4, requires_grad=True))


def test_assigning_data_is_refused():
    def prog(x):
        x.data = x * 2
        return x

    with pytest.raises(NotImplementedError, match="data"):
        fusion_alias.jit(prog)(torch.rand(3))


def test_plain_thunder_is_left_as_it_was():
    with pytest.raises(AttributeError, match="Unknown attribute data"):
        thunder.jit(_ema)(*_inputs())
