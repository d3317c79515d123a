"""Training-call classes found by hostile probes (2026-12-02): each behaves as eager, or is refused
with an error that names the problem; never a silently different value or gradient."""

import pytest
import torch

import fusion_alias
from fusion_alias.backends.reference import SCHEDULES


def _chain(p, m):
    m.mul_(2).add_(1)
    return p * 1


def _rows(p, c, v):
    c[0].copy_(v)
    c[1].copy_(v * 2)
    return p * 1


def _method_on_result(p, m):
    t = m.mul_(2)
    t.add_(1)
    return p * 1


def _momentum_step(p, g, buf):
    buf.mul_(0.9).add_(g)
    p.sub_(buf, alpha=0.1)
    return p.sum()


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("p_requires_grad", [True, False])
@pytest.mark.parametrize(
    "fn, make_rest",
    [
        (_chain, lambda: [torch.ones(2)]),
        (_rows, lambda: [torch.zeros(2, 2), torch.tensor([1.0, 2.0])]),
        (_method_on_result, lambda: [torch.ones(2)]),
    ],
    ids=["chained-writes", "rows-written", "method-on-result"],
)
def test_writes_under_no_grad_with_an_input_that_requires_grad(fn, make_rest, p_requires_grad, schedule):
    # Note [no autodiff for a call that computes no gradient] (api.py): Thunder's autograd forward
    # wrote back the mul of ``m.mul_(2).add_(1)`` and lost ``c[0].copy_(v)``
    jitted = fusion_alias.jit(fn, backend="reference", schedule=schedule)
    for _ in range(2):
        p = torch.ones(2, requires_grad=p_requires_grad)
        rest_e, rest_j = make_rest(), make_rest()
        with torch.no_grad():
            want, got = fn(p, *rest_e), jitted(p, *rest_j)
        torch.testing.assert_close(got, want)
        assert got.requires_grad == want.requires_grad
        for a, b in zip(rest_j, rest_e):
            torch.testing.assert_close(a, b)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_an_optimizer_step_under_no_grad_on_parameters_that_require_grad(schedule):
    jitted = fusion_alias.jit(_momentum_step, backend="reference", schedule=schedule)
    for step in range(3):
        torch.manual_seed(step)
        p_e = torch.randn(4, requires_grad=True)
        p_j = p_e.detach().clone().requires_grad_(True)
        g, buf_e = torch.randn(4), torch.randn(4)
        buf_j = buf_e.clone()
        with torch.no_grad():
            want, got = _momentum_step(p_e, g, buf_e), jitted(p_j, g, buf_j)
        torch.testing.assert_close(got, want)
        torch.testing.assert_close(p_j, p_e)
        torch.testing.assert_close(buf_j, buf_e)


def _diagonal_write(h0, a):
    h = h0 * 1
    h.diagonal().mul_(a)
    return h


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_a_write_through_a_view_whose_decomposition_copies_matches_eager_with_gradients(schedule):
    # Note [views whose decomposition copies] (autograd_functionalize.py): Thunder's diagonal is a gather;
    # flattened, the write landed in the gather's result and h kept its old values (then refused); since
    # session 42 the diagonal is a view the rewrite replays by its own symbol (gather_views.py)
    jitted = fusion_alias.jit(_diagonal_write, backend="reference", schedule=schedule)
    for _ in range(2):
        grads = []
        for fn in (jitted, _diagonal_write):
            h0, a = torch.ones(3, 3, requires_grad=True), torch.tensor([2.0, 3.0, 5.0], requires_grad=True)
            out = fn(h0, a)
            (out * torch.arange(9.0).view(3, 3)).sum().backward()
            grads.append((out.detach(), h0.grad, a.grad))
        for got, want in zip(*grads):
            torch.testing.assert_close(got, want)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_a_write_through_diagonal_without_gradients_runs(schedule):
    jitted = fusion_alias.jit(_diagonal_write, backend="reference", schedule=schedule)
    for _ in range(2):
        h0, a = torch.randn(3, 3), torch.tensor([2.0, 3.0, 5.0])
        torch.testing.assert_close(jitted(h0, a), _diagonal_write(h0, a))


def _grad_then_no_grad(a, b):
    a.mul_(b)
    with torch.no_grad():
        a.add_(1.0)
    return b * 1


def test_a_write_under_grad_then_one_under_no_grad_keeps_the_first_ones_history():
    # functional_rewrite.py, Note [the grad mode of a write-back]
    jitted = fusion_alias.jit(_grad_then_no_grad, backend="reference")
    for _ in range(2):
        grads = []
        for fn in (_grad_then_no_grad, jitted):
            w = torch.tensor([1.0, 2.0], requires_grad=True)
            b = torch.tensor([3.0, 4.0], requires_grad=True)
            a = w * 1
            out = fn(a, b)  # (before a.sum(): the loss reads a after the writes)
            (a.sum() + out.sum()).backward()
            grads.append((a.detach().clone(), w.grad.clone(), b.grad.clone()))
        for got, want in zip(grads[1], grads[0]):
            torch.testing.assert_close(got, want)


def _running_stat(buf, x):
    buf.mul_(0.9).add_(x.detach().mean(0))
    return x * 2


def test_a_buffer_written_with_a_detached_value_gets_no_history():
    # autograd_functionalize.py, Note [a write-back no gradient reaches]: a second training step
    # raised "backward through the graph a second time"
    jitted = fusion_alias.jit(_running_stat, backend="reference")
    buf_e, buf_j = torch.zeros(3), torch.zeros(3)
    for step in range(3):
        x = torch.full((2, 3), float(step + 1), requires_grad=True)
        _running_stat(buf_e, x).sum().backward()
        jitted(buf_j, x).sum().backward()
        torch.testing.assert_close(buf_j, buf_e)
        assert not buf_j.requires_grad and buf_j.grad_fn is None


def _index_put_accumulate_inplace(w, v):
    h = w * 1
    h.index_put_((torch.tensor([0, 0, 2]),), v, accumulate=True)
    return h


def _index_put_accumulate(w, v):
    return (w * 1).index_put((torch.tensor([0, 0, 2]),), v * 2, accumulate=True)


def _index_put_inplace(w, v):
    h = w * 1
    h.index_put_((torch.tensor([0, 1, 2]),), v)
    return h


@pytest.mark.parametrize("fn", [_index_put_accumulate_inplace, _index_put_accumulate, _index_put_inplace],
                         ids=lambda f: f.__name__)
def test_index_put_with_values_that_require_grad_is_refused(fn):
    # Note [index_put's values get no gradient] (refusals/autograd.py): v.grad was None
    with pytest.raises(fusion_alias.AliasInputError, match="index_put"):
        fusion_alias.jit(fn, backend="reference")(torch.randn(3, 4, requires_grad=True), torch.randn(3, 4, requires_grad=True))


@pytest.mark.parametrize("form", ["detached-accumulate", "detached", "setitem", "scatter_add"])
def test_index_put_neighbours_run(form):
    from grad_helpers import assert_matches_eager

    def f(w, v):
        h = w * 1
        idx = torch.tensor([0, 2])
        if form == "setitem":
            h[idx] = v
        elif form == "scatter_add":
            h = h.scatter_add(0, idx.unsqueeze(1).expand_as(v), v)
        else:
            h.index_put_((idx,), v.detach(), accumulate=form == "detached-accumulate")
        return h

    def make_inputs():
        g = torch.Generator().manual_seed(9)
        w, v = torch.randn(3, 4, generator=g).requires_grad_(), torch.randn(2, 4, generator=g).requires_grad_()
        return [w, v], [w, v]

    assert_matches_eager(f, make_inputs)


def _grad_inside(x, w):
    with torch.enable_grad():
        return (x * w).sum()


def _set_grad_enabled_inside(x, w):
    with torch.set_grad_enabled(True):
        y = (x.exp() * w).sum() + x.sum()
    return y


def _buffer_then_grad_inside(x, w, buf):
    buf.add_(1)  # under the caller's no_grad
    with torch.enable_grad():
        y = (x * w * buf).sum()
    return y


def _write_inside_grad(x, w, buf):
    with torch.enable_grad():
        t = x * w
        t.mul_(2)
        buf.copy_(t.detach())
        return t.sum()


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize(
    "fn", [_grad_inside, _set_grad_enabled_inside, _buffer_then_grad_inside, _write_inside_grad],
    ids=["grad-inside", "set-grad-enabled", "buffer-then-grad-inside", "write-inside-grad"])
def test_enable_grad_inside_a_call_made_under_no_grad(fn, schedule):
    # Note [enable_grad inside a call made under no_grad] (api.py): the result required no grad
    jitted = fusion_alias.jit(fn, backend="reference", schedule=schedule)
    n_rest = fn.__code__.co_argcount - 2
    for step in range(2):
        x = torch.arange(4.0) + step
        w_e, w_j = (torch.linspace(-1, 1, 4).requires_grad_() for _ in range(2))
        rest_e, rest_j = [torch.ones(4) for _ in range(n_rest)], [torch.ones(4) for _ in range(n_rest)]
        with torch.no_grad():
            want, got = fn(x, w_e, *rest_e), jitted(x, w_j, *rest_j)
        assert got.requires_grad == want.requires_grad
        torch.testing.assert_close(got, want)
        for a, b in zip(rest_j, rest_e):
            torch.testing.assert_close(a, b)
        want.backward()
        got.backward()
        torch.testing.assert_close(w_j.grad, w_e.grad)


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("dtype", [torch.int16, torch.float16, torch.float64])
def test_copy_from_a_dtype_conversion_of_the_destination_with_gradients(dtype, schedule):
    # fresh_results.converts_dtype: a conversion to another dtype is new memory; with gradients the pass
    # met ``to`` whole and refused it as an operand it cannot relate to ``b`` (fuzz seed 19911 #11)
    def f(b):
        b.copy_(b.to(dtype))
        return (b * b).sum()

    jitted = fusion_alias.jit(f, backend="reference", schedule=schedule)
    for step in range(2):
        leaf_e, leaf_j = ((torch.linspace(-4, 4, 6) + step).requires_grad_() for _ in range(2))
        want, got = f(leaf_e * 1), jitted(leaf_j * 1)
        torch.testing.assert_close(got, want)
        want.backward()
        got.backward()
        if dtype.is_floating_point:
            torch.testing.assert_close(leaf_j.grad, leaf_e.grad)
        # (int16: eager's leaf gets a zero gradient through the copy, fusion_alias's None: docs/limits.md)
