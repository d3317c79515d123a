"""Calls that compute gradients: what fusion_alias runs, and what it refuses with a clear error.

Such calls go through Thunder's autodiff (Note [autograd keeps Thunder's alias pass]
in api.py). Thunder 0.2.6 loses in-place writes into inputs that require grad, or
the gradient through them, without an error (Note [writes into inputs that
require grad] in refusals/autograd.py): those are refused, with workarounds that work.
"""

from __future__ import annotations

import pytest
import torch

import fusion_alias
from tests.grad_helpers import assert_matches_eager

LIMITATION = "requires grad, in a call that computes gradients: not supported"


def _grad_inputs(seed=0, n=2, shape=(3, 3)):
    """Leaves w_i and non-leaf inputs x_i = w_i * 1 (eager allows writing into those)."""
    g = torch.Generator().manual_seed(seed)
    ws = [torch.randn(*shape, generator=g).requires_grad_() for _ in range(n)]
    return ws, [w * 1 for w in ws]


def _grads_match(fn, jitted, n=2):
    ws_e, xs_e = _grad_inputs(n=n)
    ws_j, xs_j = _grad_inputs(n=n)
    want, got = fn(*xs_e), jitted(*xs_j)
    torch.testing.assert_close(got, want)
    for x_j, x_e in zip(xs_j, xs_e):
        torch.testing.assert_close(x_j.detach(), x_e.detach())  # mutated inputs too
    weights = torch.arange(want.numel(), dtype=want.dtype).reshape(want.shape)
    (want * weights).sum().backward()
    (got * weights).sum().backward()
    for w_j, w_e in zip(ws_j, ws_e):
        assert (w_j.grad is None) == (w_e.grad is None)
        if w_e.grad is not None:
            torch.testing.assert_close(w_j.grad, w_e.grad)


def write_into_grad_input(a, b):
    a.add_(1)
    return a * b  # Thunder 0.2.6: a's gradient comes back None


def write_through_view_of_grad_input(a, b):
    a[0:2].add_(1)
    return a * b  # Thunder 0.2.6 (our pass before this check): the write is lost


def test_write_into_a_non_leaf_input_that_requires_grad_matches_eager():
    # functionalized before the autodiff; the final value is written back in eager
    _grads_match(write_into_grad_input, fusion_alias.jit(write_into_grad_input))


def test_write_through_a_view_of_an_input_that_requires_grad_matches_eager():
    # Note [functionalize before the autodiff]: a scatter into the input's value, written back in eager
    assert_matches_eager(write_through_view_of_grad_input, lambda: _grad_inputs())


def test_workaround_clone_gives_eager_values_and_gradients():
    def fn(a, b):
        a = a.clone()
        a.add_(1)
        return a * b

    _grads_match(fn, fusion_alias.jit(fn))


def test_write_into_a_tensor_the_program_makes_is_differentiated():
    def fn(a, b):
        c = a * 2
        c.add_(b)
        c.tanh_()
        return c * a

    _grads_match(fn, fusion_alias.jit(fn))


@pytest.mark.parametrize("schedule", ["reads-first", "writes-first"])
def test_workaround_no_grad_runs_the_write(schedule):
    jitted = fusion_alias.jit(write_into_grad_input, schedule=schedule)
    _, xs_e = _grad_inputs()
    _, xs_j = _grad_inputs()
    with torch.no_grad():
        want, got = write_into_grad_input(*xs_e), jitted(*xs_j)
    torch.testing.assert_close(got, want)
    torch.testing.assert_close(xs_j[0], xs_e[0])


def test_aliased_inputs_of_different_sizes_with_gradients_match_eager():
    def fn(a, b):
        c = a * 2
        c.add_(b)  # any in-place op makes Thunder's alias pass reshape b into a's shape
        return c

    def make():
        ws, (x,) = _grad_inputs(n=1)
        return ws, [x, x[0, 0]]

    # Thunder's alias pass failed here ("Attempting to reshape"); functionalized, it matches eager
    assert_matches_eager(fn, make)
    # the workaround: pass a clone, so that the arguments do not share memory
    (w_e,), (x_e,) = _grad_inputs(n=1)
    (w_j,), (x_j,) = _grad_inputs(n=1)
    want, got = fn(x_e, x_e[0, 0].clone()), fusion_alias.jit(fn)(x_j, x_j[0, 0].clone())
    torch.testing.assert_close(got, want)
    want.sum().backward()
    got.sum().backward()
    torch.testing.assert_close(w_j.grad, w_e.grad)


def view_then_write(a, b):
    c = a * 2
    v = c[0]
    c.add_(b)
    return v * 3  # Thunder 0.2.6: b's gradient is wrong


def write_through_view_then_read_base(a, b):
    c = a * 2
    c[0].mul_(b[0])
    return c  # Thunder 0.2.6: both gradients are wrong


@pytest.mark.parametrize("fn", [view_then_write, write_through_view_then_read_base])
def test_write_into_a_differentiable_tensor_with_views_matches_eager(fn):
    # was refused (Thunder 0.2.6's autodiff gets it wrong); functionalized, it runs
    assert_matches_eager(fn, lambda: _grad_inputs())
    with torch.no_grad():
        _, xs_e = _grad_inputs()
        _, xs_j = _grad_inputs()
        torch.testing.assert_close(fusion_alias.jit(fn)(*xs_j), fn(*xs_e))


def test_write_of_a_differentiable_value_into_a_view_of_a_plain_tensor_is_differentiated():
    def cache_write(cache, k):
        cache[:, 0] = k
        return cache * 2

    def make():
        (w,), (k,) = _grad_inputs(n=1, shape=(3,))
        return w, [torch.zeros(3, 4), k]

    (w_e, args_e), (w_j, args_j) = make(), make()
    want, got = cache_write(*args_e), fusion_alias.jit(cache_write)(*args_j)
    torch.testing.assert_close(got, want)
    torch.testing.assert_close(args_j[0], args_e[0])
    weights = torch.arange(12.0).reshape(3, 4)
    (want * weights).sum().backward()
    (got * weights).sum().backward()
    torch.testing.assert_close(w_j.grad, w_e.grad)


def test_disjoint_inputs_of_one_storage_with_gradients_and_a_write_match_eager():
    def fn(a, b, c):
        t = c * 2
        t.mul_(a)
        return b * 1  # Thunder 0.2.6 (its alias pass) returned a's value here

    def make():
        ws, (x,) = _grad_inputs(n=1, shape=(4, 6))
        return ws, [x[2, 5], x[0, 0], x[3, 5].clone()]

    assert_matches_eager(fn, make)


@pytest.mark.parametrize("views", ["element", "transposed_halves"])
def test_write_into_an_input_overlapping_another_with_gradients_matches_eager(views):
    # Note [inputs that overlap, as views of one base]
    def fn(a, b):
        b.mul_(2)
        return a * 1, b * a.sum()  # reads the write through the overlap

    def make():
        ws, (x,) = _grad_inputs(n=1, shape=(4, 4))
        return ws, ([x, x[0, 0]] if views == "element" else [x[:, ::2], x.t()])

    assert_matches_eager(fn, make)


def test_overlapping_inputs_with_separate_histories_match_eager():
    # one a view of x, the other of x.detach(): eager sends their gradients apart; the detached one joins
    # x's memory as a detached alias (leaf_views.py, Note [an input that is a detached alias of one that
    # requires grad]; refused before session 42)
    def fn(a, b):
        b.mul_(2)
        return a * 1

    def make():
        ws, (x,) = _grad_inputs(n=1)
        return ws, [x, x.detach()[0, 0]]

    assert_matches_eager(fn, make)


def test_write_through_a_diagonal_of_a_grad_input_matches_eager():
    # a gather in Thunder, kept whole: replayed by its own symbol since session 42 (gather_views.py, Note [a
    # diagonal is a view the rewrite replays by its own function]); refused before
    def fn(a):
        a.diagonal().tanh_()
        return a * 1

    def make():
        return _grad_inputs(n=1, shape=(4, 3))

    assert_matches_eager(fn, make)


def test_aliased_inputs_of_one_size_with_gradients_and_a_write_match_eager():
    def fn(a, b):
        t = torch.where(b[1::2] > 0, b[1::2], b[1::2])
        t.tanh_()  # a write into a fresh tensor, but the inputs alias: Thunder's gradient was wrong
        return b, a

    def make():
        ws, (x,) = _grad_inputs(n=1, shape=(6, 4))
        return ws, [x, x.view(-1)]

    assert_matches_eager(fn, make)
    # without the write, or with separate inputs, it runs
    _grads_match(lambda a, b: fn(a, b.clone())[0] * 1, fusion_alias.jit(lambda a, b: fn(a, b.clone())[0] * 1))


def test_read_of_a_value_the_write_overwrote_matches_eager():
    def fn(a):
        t = a * 0.5
        t.sin_()  # sin's gradient needs the old t: functionalized, the old t is its own value
        return t * 0.5

    assert_matches_eager(fn, lambda: _grad_inputs(n=1))

    def fine(a):
        t = a * 0.5
        t.add_(1)  # add's gradient needs no value
        t.tanh_()  # tanh's gradient needs only its result
        return t * a

    _grads_match(fine, fusion_alias.jit(fine), n=1)


def test_write_into_a_plain_input_read_back_by_the_return_runs():
    # Thunder's test_prim_inplace_copy_bwd (and batch-norm running stats): the joint trace returns
    # the written input by its old name; that is the buffer, not a value saved for the backward
    import thunder

    def eager(x, y):
        z = x * y
        z = z * x
        x.copy_(z)
        return y * y

    def traced(x, y):
        z = x * y
        z = z * x
        thunder.core.prims.copy_(z, x, grad_enabled=True)
        return y * y

    (w_e,), (y_e,) = _grad_inputs(n=1)
    (w_j,), (y_j,) = _grad_inputs(n=1)
    x_e, x_j = torch.ones(3, 3) * 0.5, torch.ones(3, 3) * 0.5
    want, got = eager(x_e, y_e), fusion_alias.jit(traced)(x_j, y_j)
    torch.testing.assert_close(got, want)
    torch.testing.assert_close(x_j.detach(), x_e.detach())
    want.sum().backward()
    got.sum().backward()
    torch.testing.assert_close(w_j.grad, w_e.grad)


def test_unused_aliased_arguments_with_a_write_match_eager():
    # fuzz --grad seed 1 #234: with unused aliased arguments, Thunder 0.2.6's alias pass indexes the
    # trace's arguments by the user's positions and raises a bare IndexError
    def fn(a, b, c, d):
        t0 = d.t()
        d.neg_()
        return t0

    def make():
        ws, (x0, x1) = _grad_inputs(n=2, shape=(4, 6))
        x1 = x1.reshape(6, 4)
        return ws, [x0, x0.view(-1), x1[1::2], x1.t()]

    assert_matches_eager(fn, make)  # Thunder's alias pass is skipped now: it runs


def test_forward_and_backward_nodes_never_share_a_region():
    # fuzz --grad seed 2 #715: Thunder splits the joint trace after the pass; a region holding a
    # forward neg and a backward add of get_grad results left the forward reading a missing gradient
    def fn(a):
        return a.clone(), a, -a

    _grads_match(lambda a: torch.stack(fn(a)), fusion_alias.jit(lambda a: torch.stack(fn(a))), n=1)
    jitted = fusion_alias.jit(fn)
    (w,), (x,) = _grad_inputs(n=1)
    outs = jitted(x)
    sum(o.sum() for o in outs).backward()
    torch.testing.assert_close(w.grad, torch.ones_like(w))  # 1 + 1 - 1


# Note [a conversion eager returns as itself] (autograd_functionalize.py): eager returns these as the tensor
# they were called on, so a write through the result is a write into it; with gradients such writes and
# reads were refused ("cannot express as views of one tensor") until session 21
_CONVERSIONS_OF_ITSELF = {
    "cpu": lambda t: t.cpu(), "to-cpu": lambda t: t.to("cpu"), "type_as": lambda t: t.type_as(t),
    "type": lambda t: t.type(t.dtype), "double": lambda t: t.double(), "sum_to_size": lambda t: t.sum_to_size(t.shape),
    "conj": lambda t: t.conj(), "resolve_conj": lambda t: t.resolve_conj(), "real": lambda t: t.real,
}


@pytest.mark.parametrize("kind", sorted(_CONVERSIONS_OF_ITSELF))
def test_writes_through_a_conversion_eager_returns_as_itself_match_eager_with_gradients(kind):
    conv = _CONVERSIONS_OF_ITSELF[kind]

    def fn(a, b):
        h = a * 2
        y = conv(h)  # eager: h itself
        y.add_(b)  # a write into h's memory (add_: saves nothing a later write of b could stale)
        z = conv(b)
        r = (h * 3).sum()  # reads the written h
        b.add_(1)  # a plain input written through its own name: z (b itself) sees it
        return r, z * 2, y

    def make():
        g = torch.Generator().manual_seed(0)
        a = torch.randn(3, 4, dtype=torch.float64, generator=g, requires_grad=True)
        return [a], [a, torch.randn(3, 4, dtype=torch.float64, generator=g)]

    assert_matches_eager(fn, make)


@pytest.mark.parametrize("transposed", [False, True])
def test_a_write_through_contiguous_with_gradients_matches_eager(transposed):
    # eager's answer (the tensor itself, or a copy) follows the call's layout: decided from it as the fusion
    # pass decides it (eager_copies.py, Note [contiguous() with gradients, as eager answers it]); refused
    # before session 42
    def fn(a):
        h = a * 2
        h.contiguous().mul_(2)
        return h * 1

    def make():
        ws, (x,) = _grad_inputs(n=1, shape=(3, 4))
        return ws, [x.t() if transposed else x]

    assert_matches_eager(fn, make)


# Note [narrow is a slice] (view_rewrites.py): torch.narrow and swapaxes ran whole on torch, opaque views; with
# gradients writes through them were refused until session 21
_VIEWS_THUNDER_KEEPS_WHOLE = {
    "narrow": lambda t: t.narrow(1, 1, 2), "narrow-negative": lambda t: t.narrow(-1, -3, 2),
    "swapaxes": lambda t: t.swapaxes(0, 1), "swapdims": lambda t: t.swapdims(-1, 0),
}


@pytest.mark.parametrize("kind", sorted(_VIEWS_THUNDER_KEEPS_WHOLE))
def test_writes_through_narrow_and_swapaxes_match_eager_with_gradients(kind):
    view = _VIEWS_THUNDER_KEEPS_WHOLE[kind]

    def fn(a, cache, k):
        h = a * 2
        t = view(h)
        u = view(cache)
        t[0].mul_(3)  # a write into h's memory through the view
        u[0].copy_(k[: u.shape[-1]])  # a KV-cache-like write into a plain input
        return (h * h).sum(), t * 1, u.sum()

    def make():
        g = torch.Generator().manual_seed(0)
        a = torch.randn(4, 4, dtype=torch.float64, generator=g, requires_grad=True)
        k = torch.randn(4, dtype=torch.float64, generator=g, requires_grad=True)
        return [a, k], [a, torch.zeros(4, 4, dtype=torch.float64), k]

    assert_matches_eager(fn, make)


# Note [clamp's gradient at a bound] (clamp_ties.py): Thunder's clamp gave 0 where the element equals a bound
@pytest.mark.parametrize("spelling", ["clamp_max", "clamp_min", "clamp_both", "clip", "clamp_min_fn", "clamp_",
                                      "clip_", "clamp_item"])
def test_clamp_at_its_bound_has_eagers_gradient(spelling):
    ops = {
        "clamp_max": lambda x: x.clamp(max=0.25),
        "clamp_min": lambda x: torch.clamp(x, min=0.25),
        "clamp_both": lambda x: x.clamp(0.25, 0.5),
        "clip": lambda x: torch.clip(x, max=0.5),
        "clamp_min_fn": lambda x: x.clamp_min(0.5),
        "clamp_": lambda x: (x * 1).clamp_(max=0.5),
        "clip_": lambda x: (x * 1).clip_(0.25, 0.5),
        "clamp_item": lambda x: (lambda y: y.clamp_(max=y.max().item() - 0.25))(x * 1),  # (fuzz seed 40041 #63)
    }
    fn = ops[spelling]
    x_eager = torch.tensor([0.25, 0.5, 0.75, 0.1], requires_grad=True)
    x_jit = x_eager.detach().clone().requires_grad_()
    want = fn(x_eager)
    got = fusion_alias.jit(fn)(x_jit)
    (want * torch.arange(1.0, 5.0)).sum().backward()
    (got * torch.arange(1.0, 5.0)).sum().backward()
    torch.testing.assert_close(got, want)
    torch.testing.assert_close(x_jit.grad, x_eager.grad)
