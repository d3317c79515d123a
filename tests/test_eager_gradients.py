"""Gradients Thunder 0.2.6 lacks (remainder, lerp, minimum, round, trunc, isfinite), lent by fusion_alias's
executor (eager_gradients.py), and ``%`` with eager's values (Thunder's proxy has no ``__mod__`` method;
inplace_lookasides.py, Note [``x % y`` as eager's remainder])."""

import pytest
import thunder
import torch

import fusion_alias
from fusion_alias.backends.reference import SCHEDULES

from grad_helpers import assert_matches_eager


def _positive_divisor(seed):
    def make_inputs():
        g = torch.Generator().manual_seed(seed)
        w = (torch.randn(3, 4, generator=g) * 4).requires_grad_()
        r = (torch.rand(4, generator=g) + 0.5).requires_grad_()
        return [w, r], [w, r]

    return make_inputs


def _written_view_then_remainder(w, r):
    a = w * 1
    v = a[1]
    v.add_(r)  # a's row 1 written through a view, then read by both spellings
    return a % r, torch.remainder(v, 0.7), (a.detach() % 0.3) * w


@pytest.mark.parametrize(
    "fn",
    [
        lambda w, r: w % r,
        lambda w, r: torch.remainder(w, -r) + w % 0.3,
        lambda w, r: (w * 1).remainder_(r) * r,
        _written_view_then_remainder,
        lambda w, r: (torch.arange(12).reshape(3, 4) % 5) * w,  # an integer index in a training call
    ],
    ids=["mod", "remainder-negative-divisor", "remainder_", "written-view", "integer-index"],
)
def test_remainder_gradient_matches_eager(fn):
    assert_matches_eager(fn, _positive_divisor(3))


def _ties(seed):
    """A (3, 4) and a (4,) leaf, with ties between them in row 0 (minimum's shared gradient)."""
    def make_inputs():
        g = torch.Generator().manual_seed(seed)
        w = torch.randn(3, 4, generator=g) * 2
        r = torch.randn(4, generator=g)
        w[0] = r
        return [w.requires_grad_(), r.requires_grad_()], [w, r]

    return make_inputs


def _clipped_step(w, r):
    u = w * 1
    u.copy_(torch.minimum(w, r.exp()))  # the minimum written into a copy of an operand
    return u * r, torch.where(u.isfinite(), u, 0.0)


@pytest.mark.parametrize(
    "fn",
    [
        lambda w, r: torch.minimum(w, r),
        lambda w, r: torch.minimum(r, w * 2) + torch.minimum(w, 0.5 * torch.ones(())),
        lambda w, r: w.round() * r + w.trunc() * w + torch.round(r * 3) / 3,
        lambda w, r: torch.where(w.isfinite(), w, r) * w.isfinite(),
        lambda w, r: torch.lerp(w, r, 0.3) + torch.lerp(r, w, r.sigmoid()),
        _clipped_step,
    ],
    ids=["minimum", "minimum-broadcast", "round-trunc", "isfinite", "lerp", "minimum-written-back"],
)
def test_gradients_thunder_lacks_match_eager(fn):
    assert_matches_eager(fn, _ties(5))


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_number_mod_tensor(schedule):
    def f(x, y):
        return 7 % y + x % 3, -x % y

    x, y = torch.tensor([-7, 7, 5, 0, 9]), torch.tensor([3, -2, 1, 4, -5])
    got = fusion_alias.jit(f, backend="reference", schedule=schedule)(x, y)
    for g, w in zip(got, f(x, y)):
        torch.testing.assert_close(g, w, rtol=0, atol=0)


def test_number_mod_tensor_that_requires_grad_is_refused_as_eager_raises():
    def f(r):
        return 2.5 % r

    r = (torch.rand(4) + 0.5).requires_grad_()
    with pytest.raises(RuntimeError, match="derivative for aten::remainder is not implemented"):
        f(r).sum().backward()  # eager: remainder.Scalar_Tensor has no derivative
    with pytest.raises(NotImplementedError, match="derivative for aten::remainder is not implemented"):
        fusion_alias.jit(f, backend="reference")(r)
    torch.testing.assert_close(fusion_alias.jit(f, backend="reference")(r.detach()), f(r.detach()))


@pytest.mark.parametrize("fn", [lambda w: torch.remainder(w, 0.3), lambda w: torch.minimum(w, w * 2)])
def test_plain_thunder_is_left_as_it_is(fn):
    """The gradient rules are fusion_alias's executor's, not registered into Thunder's own table."""
    w = torch.randn(4, requires_grad=True)
    with pytest.raises(RuntimeError, match="Failed to find a gradient transform"):
        thunder.jit(fn)(w)


# Note [max along a dim hands its gradient to the index it returns] (min_max.py): ties after relu
@pytest.mark.parametrize(
    "fn",
    [
        lambda w, r: w.max(0).values * r,
        lambda w, r: torch.max(w.relu(), dim=1, keepdim=True)[0] * w,
        lambda w, r: w.min(-1).values,
        lambda w, r: torch.min(w, 0),  # the named result returned, indices too
        lambda w, r: torch.min(w, r) + w.min().reshape(1),
        lambda w, r: w * w.max(0).indices,
    ],
    ids=["max-dim", "max-of-relu-keepdim", "min-negative-dim", "min-named", "min-overloads", "max-indices"],
)
def test_max_and_min_along_a_dim_match_eager_at_ties(fn):
    def make_inputs():
        w = torch.tensor([[0.0, 1.0, 1.0, -1.0], [2.0, 0.0, -1.0, 1.0], [2.0, 1.0, 0.0, -1.0]], requires_grad=True)
        r = torch.tensor([1.0, 1.0, 0.0, -1.0], requires_grad=True)
        return [w, r], [w, r]

    assert_matches_eager(fn, make_inputs)


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64])
def test_min_overloads_without_gradients(dtype):
    def f(x, y):
        return torch.min(x, 1), x.min(0, keepdim=True), x.min(), torch.min(x, y), x.max(-1)

    x = torch.tensor([[3, 1, 1], [0, 0, 5]], dtype=dtype)
    y = torch.tensor([[2, 2, 0], [1, -1, 5]], dtype=dtype)
    for schedule in SCHEDULES:
        got = fusion_alias.jit(f, backend="reference", schedule=schedule)(x, y)
        for g, w in zip(got, f(x, y)):
            assert type(g) is type(w)
            torch.testing.assert_close(g, w, rtol=0, atol=0)


def _with_zeros():
    def make_inputs():
        w = torch.tensor([[0.0, 2.0, -1.5, 3.0], [0.0, 0.0, 1.0, 2.0], [1.5, -2.0, 0.5, 0.0]], requires_grad=True)
        r = torch.tensor([0.0, 2.0, 0.5, 3.0], requires_grad=True)
        return [w, r], [w, r]

    return make_inputs


# Note [gradients Thunder gets wrong at zero] (eager_gradients.py): Thunder's rules gave NaN here
@pytest.mark.parametrize(
    "fn",
    [
        lambda w, r: w.pow(0) + w.pow(2) + w ** 1,
        lambda w, r: w.abs().pow(r),  # r's gradient at a zero base
        lambda w, r: 2.0 ** r + 0.0 ** r + r ** w.abs(),
        lambda w, r: w.prod(1),  # rows with no zero, one zero and two zeros
        lambda w, r: w.prod(0, keepdim=True) * r + w.prod().reshape(1),
        lambda w, r: torch.prod(w * 1, 0) * torch.pow(r, 2),
        lambda w, r: (w.pow(0), r ** 0.0),  # the only use of each (Note [a zero gradient made in backward])
        lambda w, r: w.round() + r.trunc(),
    ],
    ids=["pow-number-exponent", "pow-tensor-exponent", "pow-number-base", "prod-rows", "prod-keepdim-all", "prod-pow",
         "pow-zero-only-use", "round-trunc-only-use"],
)
def test_gradients_thunder_gets_wrong_at_zero_match_eager(fn):
    assert_matches_eager(fn, _with_zeros())


# Note [a norm's gradient at zero] (zero_norms.py): a zero row's gradient was NaN
@pytest.mark.parametrize(
    "fn",
    [
        lambda w, r: torch.nn.functional.normalize(w),
        lambda w, r: torch.nn.functional.normalize(w, p=1, dim=0) * r,
        lambda w, r: torch.nn.functional.normalize(w * 1e-7, p=3.0, dim=(0, 1), eps=1e-6),
        lambda w, r: torch.nn.functional.normalize(w.double(), dim=-1),
    ],
    ids=["default", "p1-dim0", "p3-dims-eps", "float64"],
)
def test_normalize_of_a_zero_row_matches_eager(fn):
    def make_inputs():
        w = torch.tensor([[0.0, 0.0, 0.0, 0.0], [2.0, 0.0, -1.0, 1.0], [2.0, 1.0, 0.0, -1.0]], requires_grad=True)
        r = torch.tensor([1.0, 0.0, 0.5, -1.0], requires_grad=True)
        return [w, r], [w, r]

    assert_matches_eager(fn, make_inputs)


# Note [sigmoid where exp overflows] (saturated_sigmoid.py): NaN gradients below -88.72 (float32)
@pytest.mark.parametrize(
    "fn",
    [
        lambda w, r: w.sigmoid() * r,
        lambda w, r: torch.sigmoid(w.masked_fill(w < 0, -1e4)),  # a masked gate
        lambda w, r: torch.nn.Sigmoid()(w * 100) + torch.special.expit(w.double() * 1000).float(),
        lambda w, r: (w * 200).sigmoid_() * r,
    ],
    ids=["method", "masked-gate", "module-expit-float64", "in-place"],
)
def test_sigmoid_where_exp_overflows_matches_eager(fn):
    def make_inputs():
        w = torch.tensor([[-1e4, -100.0, -88.0, 0.0], [3.0, -0.5, 1e4, -88.8]], requires_grad=True)
        r = torch.tensor([1.0, 0.0, 0.5, -1.0], requires_grad=True)
        return [w, r], [w, r]

    assert_matches_eager(fn, make_inputs)


# Note [lerp's shape from a 0-d start] (lerp_shapes.py): the trace declared the result 0-d
@pytest.mark.parametrize(
    "fn",
    [
        lambda w, r: torch.lerp(r[0], w, 0.5).cummin(1)[0],
        lambda w, r: r[1].lerp(w, r.sigmoid()) * 2,
        lambda w, r: torch.lerp(r[0], r[1], w).amax(0),  # a 0-d start and end, the weight the larger
    ],
    ids=["function-then-cummin", "method-tensor-weight", "weight-largest"],
)
def test_lerp_of_a_zero_dim_start_matches_eager(fn):
    assert_matches_eager(fn, _ties(9))


# Note [max_pool1d's gradient at a tie] (pool_ties.py): a window's gradient went half to each tied maximum
@pytest.mark.parametrize(
    "fn",
    [
        lambda w, r: torch.nn.functional.max_pool1d(w.unsqueeze(0), 2),
        lambda w, r: torch.nn.MaxPool1d(2, stride=1)(w.unsqueeze(0)) * 2,
        lambda w, r: torch.nn.functional.max_pool1d(w, kernel_size=(2,), stride=(1,), dilation=2),
        lambda w, r: torch.max_pool1d(torch.nn.functional.conv1d(w.unsqueeze(0), torch.ones(2, 3, 2)).relu(), 2),
    ],
    ids=["function", "module-stride", "tuples-dilation", "conv-relu-pool"],
)
def test_max_pool1d_at_ties_matches_eager(fn):
    def make_inputs():  # windows of two equal values, and of zeros after relu
        w = torch.tensor([[0.0, 0.0, 1.0, 1.0], [2.0, 2.0, -1.0, -1.0], [1.0, 1.0, 0.0, 0.0]], requires_grad=True)
        r = torch.zeros(4, requires_grad=True)
        return [w, r], [w, r]

    assert_matches_eager(fn, make_inputs)
