"""Outputs that share memory a write changes, in calls that compute gradients.

Note [outputs sharing written memory] in refusals/autograd.py: Thunder 0.2.6 gets
these gradients wrong without an error; fusion_alias refuses them, and runs the
neighbours Thunder gets right.
"""

from __future__ import annotations

import pytest
import thunder
import torch

import fusion_alias
from tests.grad_helpers import assert_matches_eager


def _derived(shape=(3,)):
    def make():
        w = torch.linspace(-1.0, 1.0, steps=torch.Size(shape).numel()).reshape(shape).requires_grad_()
        return [w], [w * 1]

    return make


def renamed_twice(a):
    t0 = a * 0.5
    t1 = t0.neg_()
    t0.mul_(0.5)
    return t1, t0  # the fuzzer's #24: Thunder's gradient is 0, eager's -1 per element (loss o1 + 3 o2)


def written_result_and_buffer(a):
    t0 = a * 0.5
    t1 = t0.neg_()
    return t1, t0


def chained_results(a):
    t0 = a * 0.5
    t1 = t0.neg_()
    t2 = t1.mul_(0.5)
    return t1, t2


def view_before_write(a):
    t0 = a * 0.5
    v = t0.view(3)
    t0.mul_(2)
    return t0, v


@pytest.mark.parametrize("fn", [renamed_twice, written_result_and_buffer, chained_results, view_before_write])
def test_outputs_sharing_memory_written_after_match_eager(fn):
    with pytest.raises(AssertionError):  # plain Thunder's gradient is wrong here (issue 13)
        assert_plain_thunder_matches(fn, thunder.jit(fn))
    # functionalized before the autodiff, each output is a value of its own: eager's gradients
    assert_matches_eager(fn, _derived())


def assert_plain_thunder_matches(fn, jitted):
    [w_e], [a_e] = _derived()()
    [w_j], [a_j] = _derived()()
    for f, w, a in ((fn, w_e, a_e), (jitted, w_j, a_j)):
        o1, o2 = f(a)
        (o1.sum() + 3 * o2.sum()).backward()
    assert torch.allclose(w_e.grad, w_j.grad), (w_e.grad, w_j.grad)


def test_renamed_twice_is_minus_one_in_eager():
    [w], [a] = _derived()()
    o1, o2 = renamed_twice(a)
    (o1.sum() + 3 * o2.sum()).backward()
    torch.testing.assert_close(w.grad, -torch.ones(3))


def same_tensor_twice_no_write(a):
    t = a * 0.5
    return t, t


def same_tensor_twice_after_write(a):
    t = a * 0.5
    t.mul_(2)
    return t, t


def written_then_other_output(a):
    t0 = a * 0.5
    t1 = t0.neg_()
    return t1, a * 2


@pytest.mark.parametrize("fn", [same_tensor_twice_no_write, same_tensor_twice_after_write, written_then_other_output])
def test_outputs_made_after_the_last_write_run(fn):
    assert_matches_eager(fn, _derived())


def _detached_view_of_a_written_input(h, b):
    h[[0, 2]] = b  # (a write through a list key: any write makes the call functionalized)
    b[0:2] = 0.75
    return h.t(), h.select(0, 3).detach()[1::2], h.detach()[1::2]


def test_a_detached_view_of_a_written_input_requires_no_grad():
    # fuzz seed 20754 #53 (hidden, --grad, session 20): the detached views were remade as views of `h` after
    # the call (view_outputs.py) before the outputs no gradient reaches were detached by object identity, so
    # they came back requiring grad, and a loss over the outputs that require grad had other leaf gradients
    # (autograd_functionalize.write_back)
    def make_inputs():
        g = torch.Generator().manual_seed(0)
        x1, x2 = torch.rand(4, generator=g).requires_grad_(), torch.rand(4, 4, generator=g).requires_grad_()
        return [x1, x2], (x2 * 1, x1 * 1)

    assert_matches_eager(_detached_view_of_a_written_input, make_inputs)
    for schedule in ("reads-first", "writes-first"):
        got = fusion_alias.jit(_detached_view_of_a_written_input, backend="reference", schedule=schedule)(*make_inputs()[1])
        assert [t.requires_grad for t in got] == [True, False, False]


def _returns_a_view_of_the_second_of_two_elements(a, c):
    return c.view(1, -1), a * 2


def _writes_then_returns_a_view_of_the_second(a, c):
    t0 = a * 1.0
    t0.mul_(2)
    return c.unsqueeze(0), t0


@pytest.mark.parametrize("prog", [_returns_a_view_of_the_second_of_two_elements, _writes_then_returns_a_view_of_the_second])
@pytest.mark.parametrize("key", ["elements", "rows", "columns"])
def test_an_output_view_is_remade_from_the_argument_it_is_a_view_of(prog, key):
    # fuzz seed 20775 #16 (dtype --grad): a and c views of one base; the output view of c was remade after the call
    # from a (the first argument of that storage), and x[0, 1]'s gradient was lost (view_outputs.py, Note [the
    # argument an output view is remade from]); columns: arguments that are not contiguous
    def make():
        w = torch.linspace(-1, 1, 24).reshape(4, 6).requires_grad_()
        x = w * 1
        return [w], {"elements": (x[0, 2], x[0, 1]), "rows": (x[0], x[1]), "columns": (x[:, 0], x[:, 1])}[key]

    assert_matches_eager(prog, make)


def test_an_as_strided_output_reaching_past_its_argument_keeps_eagers_gradients():
    # fuzz seed 20777 #12 (strided --grad), met by the first form of the fix above: eager's a.as_strided(...) reaching
    # past a's elements passes them no gradient; remade from x0, which holds them, it passed one. Where the arguments
    # of the storage do not all hold the output, it is left Thunder's output (Note [the argument an output view is
    # remade from])
    def prog(a, b):
        return a.as_strided((2, 3), (1, 1), 1), a.as_strided((2, 2), (4, 4), 2), torch.tanh(a)

    def make():
        w = torch.linspace(-1, 1, 12).reshape(3, 4).requires_grad_()
        x0 = w * 1
        return [w], (x0.as_strided((3, 3), (1, 1)), x0)

    assert_matches_eager(prog, make)


_CLOSED_OVER: dict = {}


def _returns_a_view_of_a_closed_over_element(a, b):
    h = _CLOSED_OVER["h"]  # x2[1, 2]: read from a global, not an argument
    return h.reshape(-1), b * 2, a * 3


def test_an_output_view_of_a_tensor_no_argument_holds_keeps_eagers_gradients():
    # fuzz seed 20777 #29 (hidden --grad): the only argument of x2's storage was x2.diagonal(), and the output view of
    # the global x2[1, 2] was remade from it: x2[1, 2]'s gradient was lost (Note [the argument an output view is
    # remade from], view_outputs.py). An argument that does not hold the output's elements is not remade from
    def make():
        w0 = torch.linspace(-1, 1, 16).reshape(4, 4).requires_grad_()
        w2 = torch.linspace(-2, 2, 16).reshape(4, 4).requires_grad_()
        x0, x2 = w0 * 1, w2 * 1
        _CLOSED_OVER["h"] = x2[1, 2]
        return [w0, w2], (x0, x2.diagonal())

    assert_matches_eager(_returns_a_view_of_a_closed_over_element, make)


def _mask_of_a_written_product(x, w):  # h's last value was a differentiable extra output
    h = x @ w
    h.mul_(2)
    return (h > 0).float(), x * 1


def _zeros_like_of_a_saving_result(x, w):  # zeros_like requires no grad (gradient_operands.py)
    h = x @ w
    t = h.sin()
    h.clamp_max_(0.1)
    return torch.zeros_like(t), x * 2


@pytest.mark.parametrize("fn", [_mask_of_a_written_product, _zeros_like_of_a_saving_result])
def test_a_leaf_no_gradient_reaches_keeps_none(fn):
    # session 22 probe: w's gradient reaches no output the loss reads; eager and plain thunder.jit leave it None,
    # fusion_alias gave zeros (the written tensor's last value, kept alive, was a differentiable output), and
    # returned zeros_like(t) requiring grad
    def make():
        g = torch.Generator().manual_seed(0)
        x = torch.randn(3, 4, generator=g).requires_grad_()
        w = torch.randn(4, 4, generator=g).requires_grad_()
        return [x, w], [x, w]

    assert_matches_eager(fn, make)
    _, (x, w) = make()
    out = fusion_alias.jit(fn, backend="reference")(x, w)
    assert not out[0].requires_grad
    out[1].sum().backward()
    assert w.grad is None and x.grad is not None
