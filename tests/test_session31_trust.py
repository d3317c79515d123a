"""Session 31 fuzzing (``--special-values`` streams, ``order --grad``): a view of an argument made by a tensor
property (``a.mT``, ``a.T``: ``prims.transpose`` in the trace, no torch view symbol), ``detach()``ed and viewed
again, returned in a call that computes gradients (fuzz seed 27005 #22).

Eager's result requires no grad and passes no gradient back; fusion_alias's output, remade as a view of the
argument after the call, required grad and passed the argument a gradient, silently. It is now refused as the
same program spelled with ``a.t()`` was (refusals/returned_views.py, Note [a view made under no_grad, returned])."""

import pytest
import torch

import fusion_alias
from fusion_alias.errors import AliasInputError

PROGRAMS = {
    "mT_detach_narrow": lambda a: (a.mT.detach().narrow(1, 0, 2),),
    "mT_detach_index": lambda a: (a.mT.detach()[0],),
    "T_detach_index": lambda a: (a.T.detach()[0], a * 2),
}


@pytest.mark.parametrize("schedule", ("reads-first", "writes-first"))
@pytest.mark.parametrize("name", list(PROGRAMS))
def test_detached_view_of_a_property_view(name, schedule):
    fn = PROGRAMS[name]
    leaf = torch.randn(4, 4, requires_grad=True)
    eager = fn(leaf * 1)
    assert not eager[0].requires_grad
    jitted = fusion_alias.jit(fn, backend="reference", schedule=schedule)
    leaf2 = leaf.detach().clone().requires_grad_()
    try:
        got = jitted(leaf2 * 1)
    except AliasInputError as e:
        assert "detach" in str(e)
        return
    # (were it to run, it must be eager's: no gradient through the detached output)
    assert not got[0].requires_grad
    torch.testing.assert_close(got[0], eager[0])


def test_detached_view_of_a_property_view_without_gradients_runs():
    fn = PROGRAMS["mT_detach_narrow"]
    a = torch.randn(4, 4)
    torch.testing.assert_close(fusion_alias.jit(fn)(a.clone())[0], fn(a.clone())[0])


# -- outputs no gradient reaches, in programs that write nothing (constant_outputs.py) ------------------------


class _EmaNet(torch.nn.Module):
    """The shape of fuzz seed 26007 #20 (modules --grad): an output computed under no_grad, returned beside one
    that requires grad."""

    def __init__(self):
        super().__init__()
        g = torch.Generator().manual_seed(0)
        self.w = torch.nn.Parameter(torch.rand(3, 3, generator=g))
        self.register_buffer("ema", torch.rand(3, generator=g))

    def forward(self, a):
        with torch.no_grad():
            t1 = a - self.ema
        return t1, t1 @ self.w.t() + self.ema


CONSTANT_OUTPUTS = {
    "detach_of_result": lambda a: ((a * 2).detach(), a * 3),
    "complex_detach": lambda a: (a.to(torch.complex64).detach(), a.sin()),
    "no_grad_result": lambda a: (_no_grad(lambda: a * 2), a.exp()),
    "bool_to_float": lambda a: ((a < 0).float(), a * 1),
    "detach_only": lambda a: ((a + 1).detach(),),
}


def _no_grad(fn):
    with torch.no_grad():
        return fn()


@pytest.mark.parametrize("schedule", ("reads-first", "writes-first"))
@pytest.mark.parametrize("name", list(CONSTANT_OUTPUTS))
def test_outputs_no_gradient_reaches_are_marked_as_eager(name, schedule):
    fn = CONSTANT_OUTPUTS[name]
    results = []
    for f in (fn, fusion_alias.jit(fn, backend="reference", schedule=schedule)):
        leaf = torch.tensor([[0.5, -1.0, 2.0], [3.0, 0.25, -0.5]], requires_grad=True)
        outs = f(leaf * 1)
        flags = [o.requires_grad for o in outs]
        # a loss over the outputs that require grad, each weighted by its position
        loss = sum((o * (i + 1)).sum() for i, o in enumerate(outs) if o.requires_grad)
        if torch.is_tensor(loss):
            loss.backward()
        results.append((flags, [o.detach() for o in outs], leaf.grad))
    (ef, ev, eg), (jf, jv, jg) = results
    assert jf == ef
    for e, j in zip(ev, jv):
        torch.testing.assert_close(j, e)
    assert (eg is None) == (jg is None) and (eg is None or torch.allclose(eg, jg))


def test_module_output_under_no_grad_is_marked_as_eager():
    results = []
    for jitted in (False, True):
        m = _EmaNet()
        f = fusion_alias.jit(m) if jitted else m
        leaf = torch.tensor([[0.5, -1.0, 2.0], [3.0, 0.25, -0.5]], requires_grad=True)
        t1, t2 = f(leaf * 1)
        diff = [o for o in (t1, t2) if o.requires_grad]
        g = torch.Generator().manual_seed(1)
        sum((o * torch.rand(o.shape, generator=g)).sum() for o in diff).backward()
        results.append((t1.requires_grad, m.w.grad.clone(), leaf.grad))
    (ef, ew, el), (jf, jw, jl) = results
    assert jf == ef is False
    torch.testing.assert_close(jw, ew)
    assert el is None and jl is None


# -- complex values that require grad: queries and real results whose gradient Thunder gets right -------------


COMPLEX_RIGHT = {
    "is_complex_branch": lambda x, w: x * w if x.is_complex() else x.exp() * w,
    "angle": lambda x, w: x.angle() * 3,
    "compare": lambda x, w: (x * w) * (x == w).to(x.dtype),
}


@pytest.mark.parametrize("name", list(COMPLEX_RIGHT))
def test_complex_gradients_that_need_no_refusal(name):
    """``x.is_complex()`` (no tensor result), ``x == w`` (a bool one) and ``angle`` (a real result whose Thunder gradient is eager's)
    of a complex value that requires grad were refused by the session's complex-gradient check."""
    fn = COMPLEX_RIGHT[name]
    got = []
    for f in (fn, fusion_alias.jit(fn, backend="reference")):
        leaf = torch.tensor([1 + 2j, -3 + 0.5j, 0.25 - 1j], requires_grad=True)
        w = torch.tensor([2 - 1j, 0.5 + 0.5j, 1 + 0j])
        out = f(leaf * 1, w)
        (out.real.sum() if out.is_complex() else out.sum()).backward()
        got.append((out.detach(), leaf.grad))
    torch.testing.assert_close(got[1][0], got[0][0])
    torch.testing.assert_close(got[1][1], got[0][1])


# -- a detach()ed output of another output's memory, in a training call (no_grad_writes.detached_view) --------


DETACHED_OUTPUTS = {
    "sum_reshape_clamp": lambda a: (lambda t0: (t0.detach().reshape(4, 1), t0.clamp_(-0.5, 0.5))[::-1])(a.sum(1)),
    "mul_t_add": lambda a: (lambda t0: (t0.detach().t(), t0.add_(1))[::-1])(a * 2),
}


@pytest.mark.parametrize("schedule", ("reads-first", "writes-first"))
@pytest.mark.parametrize("name", list(DETACHED_OUTPUTS))
def test_detached_output_shares_memory_with_the_output_it_views(name, schedule):
    """Fuzz seed 31046 #58, #74 (``--grad --write-outputs``): the functionalized read of a detached value was a
    copy, so a write into one output after the call missed the other, where eager's two share memory."""
    fn = DETACHED_OUTPUTS[name]
    got = []
    for f in (fn, fusion_alias.jit(fn, backend="reference", schedule=schedule)):
        leaf = torch.arange(16.0).reshape(4, 4).div(10).requires_grad_()
        t0, t3 = f(leaf * 1)
        (t0 * 2).sum().backward()
        with torch.no_grad():
            t3.add_(5.0)  # a caller's later write into the detached output
        got.append((t0.detach().clone(), t3.clone(), leaf.grad, t3.requires_grad))
    for e, j in zip(*got):
        if isinstance(e, torch.Tensor):
            torch.testing.assert_close(j, e)
        else:
            assert j == e
