"""Session 29: silently wrong results found by fresh fuzz seeds and their neighbours, each against eager."""

import pytest
import torch

import fusion_alias

_GLOBAL = {}


def _weights(o: torch.Tensor) -> torch.Tensor:
    return torch.arange(float(o.numel())).reshape(o.shape)


# Note [a final value in an input's memory] (autograd_functionalize.py): fuzz seed 31036 #100 and neighbours
FINAL_VALUE_IN_AN_INPUTS_MEMORY = {
    "view_of_h": lambda a, h: (a.copy_(h.detach()), h.view(16))[1],
    "transpose_of_h": lambda a, h: (a.copy_(h.detach()), h.transpose(1, 0))[1],
    "views_of_a_and_h": lambda a, h: (a.copy_(h.detach()), a.t(), h.t())[1:],
    "copy_of_h_then_view_of_h": lambda a, h: (a.copy_(h), h.t())[1],
    "copy_of_h_then_view_of_a": lambda a, h: (a.copy_(h), a.t())[1],
    "global_h": lambda a, h: (a.copy_(_GLOBAL["h"].detach()), _GLOBAL["h"].t())[1],
    "write_then_copy": lambda a, h: (a.add_(1), a.copy_(h.detach()), h.t(), a * 2)[2:],
    "row_of_h": lambda a, h: (a.copy_(h[0].detach().expand(4, 4)), h[0].view(2, 2))[1],
}


def _call(fn, jit: bool):
    g = torch.Generator().manual_seed(7)
    a_leaf = torch.rand(4, 4, generator=g).requires_grad_()
    h_leaf = torch.rand(4, 4, generator=g).requires_grad_()
    a, h = (a_leaf * 1).clone(), h_leaf * 1
    _GLOBAL["h"] = h
    out = (fusion_alias.jit(fn) if jit else fn)(a, h)
    out = out if isinstance(out, tuple) else (out,)
    sum((o * _weights(o)).sum() for o in out if o.requires_grad).backward()
    later = []
    for o in out:  # a later in-place write into each output, as eager allows it
        o.mul_(3)
        later.append(o.detach().clone())
    return [o.detach() for o in out], later, a.detach(), [a_leaf.grad, h_leaf.grad]


@pytest.mark.parametrize("name", FINAL_VALUE_IN_AN_INPUTS_MEMORY)
def test_an_output_in_a_final_values_memory_keeps_its_gradient(name):
    fn = FINAL_VALUE_IN_AN_INPUTS_MEMORY[name]
    got, want = _call(fn, jit=True), _call(fn, jit=False)
    for g, w in zip(got[0] + got[1] + [got[2]], want[0] + want[1] + [want[2]]):
        torch.testing.assert_close(g, w)
    for g, w in zip(got[3], want[3]):  # leaf gradients, None as zeros (as the fuzzer compares them)
        if w is None or g is None:
            assert (w is None or not w.any()) and (g is None or not g.any())
        else:
            torch.testing.assert_close(g, w)


# Note [a view of a tensor only the region sees] (lowering.py): session 29 probe
OUTPUTS_WRITTEN_AFTER_THE_CALL = {
    "flatten_of_a_transpose": lambda a: a.exp().t().flatten(),
    "written_then_flattened": lambda a: (a.exp_(), a.t().flatten())[1],
    "two_outputs": lambda a: (a.exp(), a.exp().t().flatten()),
    "reshape_of_a_clone": lambda a: (a * 2).t().clone().reshape(-1),
}


@pytest.mark.parametrize("backend", ["auto", "reference"])
@pytest.mark.parametrize("name", OUTPUTS_WRITTEN_AFTER_THE_CALL)
def test_an_output_eager_makes_new_may_be_written_after_backward(name, backend):
    fn = OUTPUTS_WRITTEN_AFTER_THE_CALL[name]
    results = []
    for jitted in (fn, fusion_alias.jit(fn, backend=backend)):
        leaf = torch.arange(16.0).reshape(4, 4).div(16).requires_grad_()
        out = jitted(leaf * 1)
        out = out if isinstance(out, tuple) else (out,)
        sum((o * _weights(o)).sum() for o in out).backward()
        for o in out:
            o.mul_(3)  # eager's result is a tensor of its own (a copy): writable after the backward
        results.append(([o.detach().clone() for o in out], leaf.grad))
    (got, got_grad), (want, want_grad) = results
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w)
    torch.testing.assert_close(got_grad, want_grad)
