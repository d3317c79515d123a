"""``fill_`` and a broadcasting ``copy_``: Thunder 0.2.6 does not trace them, fusion_alias.jit does
(fusion_alias/inplace_lookasides.py). Each program is compared with eager on fresh inputs, outputs
and every argument after the call, in every reference schedule, first and cached calls."""

import pytest
import thunder
import torch

import fusion_alias
from fusion_alias.backends.reference import SCHEDULES

from grad_helpers import assert_matches_eager


def _fill(x, r):
    x.fill_(1.5)
    return x * r


def _fill_row_then_read(x, r):
    v = x[0]
    x[1].fill_(2.0)
    v.fill_(-1.0)
    return x.sum(0) + v


def _fill_with_own_element(x, r):
    # eager reads the value as a number before writing: every element becomes x[1, 2]'s old value
    return x.fill_(x[1, 2]) * 2


def _fill_with_reduction(x, r):
    x[0].fill_(r.sum())
    return x.exp()


def _fill_int_value(x, r):
    return x.fill_(3) + 1


def _torch_fill(x, r):
    torch.fill_(x[:, 1], 7.0)
    return x


def _fill_then_write_through_view(x, r):
    x.fill_(0.5)
    x[:, 0].add_(r[:3])
    return x.tanh()


def _copy_row_broadcast(x, r):
    x[1:].copy_(r)
    return x * 2


def _copy_column_broadcast(x, r):
    x.copy_(r[:3].unsqueeze(1))
    return x


def _copy_from_own_row(x, r):
    # a source that is a view of the destination's own memory, not overlapping what is written
    x[1:].copy_(x[0])
    return x + 1


def _copy_scalar_source(x, r):
    x.copy_(r[0])  # a 0-dim source
    return x


def _copy_non_blocking(x, r):
    x.copy_(r, non_blocking=True)
    return x.sum()


def _copy_into_aliased_rows(x, r):
    a = x[0]
    x.copy_(r)          # every row becomes r
    return a * 3        # a reads the new memory


PROGRAMS = [
    _fill, _fill_row_then_read, _fill_with_own_element, _fill_with_reduction, _fill_int_value,
    _torch_fill, _fill_then_write_through_view, _copy_row_broadcast, _copy_column_broadcast,
    _copy_from_own_row, _copy_scalar_source, _copy_non_blocking, _copy_into_aliased_rows,
]


def _inputs(dtype=torch.float32):
    g = torch.Generator().manual_seed(3)
    return torch.randn(3, 4, generator=g).to(dtype), torch.randn(4, generator=g).to(dtype)


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("fn", PROGRAMS, ids=lambda f: f.__name__)
def test_matches_eager(fn, schedule):
    jitted = fusion_alias.jit(fn, backend="reference", schedule=schedule)
    for _ in range(2):
        xe, re_ = _inputs()
        xj, rj = _inputs()
        want = fn(xe, re_)
        got = jitted(xj, rj)
        torch.testing.assert_close(got, want)
        torch.testing.assert_close(xj, xe)
        torch.testing.assert_close(rj, re_)


@pytest.mark.parametrize("dtype, value", [
    (torch.int64, 2.7), (torch.int64, -3), (torch.bool, 2.7), (torch.bool, 0), (torch.float64, 0.1),
    (torch.float16, 1e-3), (torch.bfloat16, 3), (torch.int32, True),
])
def test_fill_casts_to_the_destination_dtype(dtype, value):
    def f(x):
        x[1:].fill_(value)
        return x.clone()

    xe, xj = torch.zeros(3, dtype=dtype), torch.zeros(3, dtype=dtype)
    want, got = f(xe), fusion_alias.jit(f, backend="reference")(xj)
    assert got.dtype == want.dtype
    torch.testing.assert_close(got, want, rtol=0, atol=0)
    torch.testing.assert_close(xj, xe, rtol=0, atol=0)


def test_aliased_inputs():
    # x and row share memory: the fill must land before row is read
    def f(x, row):
        x.fill_(3.0)
        return row * 2

    for schedule in SCHEDULES:
        be, bj = torch.randn(3, 4), torch.randn(3, 4)
        bj.copy_(be)
        want = f(be, be[1])
        got = fusion_alias.jit(f, backend="reference", schedule=schedule)(bj, bj[1])
        torch.testing.assert_close(got, want)
        torch.testing.assert_close(bj, be)


@pytest.mark.parametrize(
    "fn, message",
    [
        (lambda x, r: x.copy_(torch.ones(3)), "must match the size of tensor b"),
        (lambda x, r: x[0].copy_(torch.ones(2, 4)), "doesn't match the broadcast shape"),
        (lambda x, r: x.fill_(r), "fill_ only supports 0-dimension value tensor"),
    ],
    ids=["not-broadcastable", "source-bigger", "fill-1d-value"],
)
def test_what_eager_rejects_is_rejected_with_its_message(fn, message):
    with pytest.raises(RuntimeError, match=message):
        fn(*_inputs())
    with pytest.raises(Exception, match=message):
        fusion_alias.jit(fn, backend="reference")(*_inputs())


def _leaves(seed):
    """``make_inputs`` for grad_helpers: a (3, 4) and a (4,) leaf that require grad."""
    def make_inputs():
        g = torch.Generator().manual_seed(seed)
        w = torch.randn(3, 4, generator=g).requires_grad_()
        r = torch.randn(4, generator=g).requires_grad_()
        return [w, r], [w, r]

    return make_inputs


def test_training_call():
    def f(w, r):
        h = w * 2
        h[0].fill_(1.0)
        h[1:].copy_(r)
        return h * w

    assert_matches_eager(f, _leaves(5))


def test_plain_thunder_is_left_as_it_is():
    # the lookasides are the executor's: thunder.jit without fusion_alias's executor still lacks fill_
    def f(x):
        return x.fill_(1.0)

    with pytest.raises(AttributeError, match="fill_"):
        thunder.jit(f)(torch.zeros(2))


# in-place ops Thunder 0.2.6 has only out of place (Note [an in-place op as its out-of-place op and a copy_])
INPLACE_OPS = {
    "sigmoid_": "x.sigmoid_()", "clamp_min_": "x.clamp_min_(0.1)", "clamp_max_": "x.clamp_max_(-0.1)",
    "clip_": "x.clip_(-0.2, 0.3)", "frac_": "x.frac_()", "nan_to_num_": "x.div_(0.0).nan_to_num_()",
    "logit_": "x.sigmoid_().logit_()", "xlogy_": "x.abs_().xlogy_(2.0)", "hypot_": "x.hypot_(y)",
    "hypot_row": "x.hypot_(y[0])", "deg2rad_": "x.deg2rad_()", "heaviside_": "x.heaviside_(y)",
    "floor_divide_": "x.floor_divide_(y)", "true_divide_": "x.true_divide_(2.0)", "square_": "x.square_()",
    "logical_and_": "x.logical_and_(y)", "tril_": "x.tril_()", "triu_": "x.triu_(1)", "renorm_": "x.renorm_(2, 0, 1.0)",
    "index_fill_": "x.index_fill_(0, torch.tensor([0, 2]), 1.0)", "masked_scatter_": "x.masked_scatter_(y > 0, x * 2)",
    "torch.sigmoid_": "torch.sigmoid_(x)", "torch.clamp_min_": "torch.clamp_min_(x, 0.0)",
    "F.leaky_relu_": "torch.nn.functional.leaky_relu_(x, 0.2)", "F.elu_": "torch.nn.functional.elu_(x)",
    "dropout-eval-inplace": "torch.nn.functional.dropout(x, 0.5, False, inplace=True)",
    "nn.Dropout-eval-inplace": "torch.nn.Dropout(0.3, inplace=True).eval()(x)",
    # through views and aliases: the write lands in the base, a view read after it sees it
    "row-sigmoid_": "x[1].sigmoid_(), x",
}


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("code", list(INPLACE_OPS.values()), ids=list(INPLACE_OPS))
def test_inplace_op_thunder_lacks(code, schedule):
    def f(x, y):
        return eval(code)

    jitted = fusion_alias.jit(f, backend="reference", schedule=schedule)
    for _ in range(2):
        (xe, ye), (xj, yj) = _inputs(), _inputs()
        want, got = f(xe, ye), jitted(xj, yj)
        torch.testing.assert_close(got, want, equal_nan=True)
        torch.testing.assert_close(xj, xe, equal_nan=True)


@pytest.mark.parametrize(
    "fn, message",
    [
        (lambda x: x.sigmoid_(), "result type Float can't be cast to the desired output type Long"),
        (lambda x: x.sigmoid_().true_divide_(2), "can't be cast to the desired output type"),
        (lambda x: x[0].hypot_(x.float()), "doesn't match the broadcast shape"),
    ],
    ids=["int-sigmoid_", "int-true_divide_", "result-bigger"],
)
def test_inplace_op_eager_rejects(fn, message):
    with pytest.raises(RuntimeError, match=message):
        fn(torch.arange(12).reshape(3, 4))
    with pytest.raises(Exception, match=message):
        fusion_alias.jit(fn, backend="reference")(torch.arange(12).reshape(3, 4))


def test_inplace_op_overlapping_operand_is_rejected_as_eager_does():
    def f(x):
        return x.hypot_(x[0])  # a partial overlap eager rejects

    with pytest.raises(RuntimeError, match="single memory location"):
        f(torch.randn(3, 4))
    with pytest.raises(Exception, match="single memory location"):
        fusion_alias.jit(f, backend="reference")(torch.randn(3, 4))


def test_inplace_op_in_a_training_call():
    def f(w, r):
        h1 = w * 2
        h1.sigmoid_()
        h2 = w + 1
        h2[0].clamp_min_(0.6)
        h3 = w - 1
        h3.hypot_(r)
        return h1 * 3, h2, h3

    assert_matches_eager(f, _leaves(7))


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_a_view_read_after_the_write_sees_it(schedule):
    def f(x, y):
        v = x[0]
        x.clamp_min_(0.0)
        return v * 2

    (xe, ye), (xj, yj) = _inputs(), _inputs()
    want, got = f(xe, ye), fusion_alias.jit(f, backend="reference", schedule=schedule)(xj, yj)
    torch.testing.assert_close(got, want)
    torch.testing.assert_close(xj, xe)


def test_metadata_inplace_ops_are_left_to_thunder():
    # x.t_() changes the view, not the elements: it must not become a copy of x.t() into x
    with pytest.raises(AttributeError, match="t_"):
        fusion_alias.jit(lambda x: x.t_(), backend="reference")(torch.randn(3, 3))


# eager's in-place dropout with p == 0 (or an empty input) returns the input untouched: no write, so
# none of the write's errors (a leaf that requires grad, a tensor saved for the backward) (hostile probe 14)
DROPOUT_NO_WRITE = {
    "p0-leaf": (lambda w, r: torch.nn.functional.dropout(w, 0.0, True, inplace=True) * r),
    "p0-after-sigmoid": (lambda w, r: torch.nn.functional.dropout(w.sigmoid(), 0.0, True, inplace=True) * r),
    "nn.Dropout-p0-after-softmax": (lambda w, r: torch.nn.Dropout(0.0, inplace=True)(w.softmax(-1)) * r),
    "empty-after-exp": (lambda w, r: (torch.nn.functional.dropout(w[:0].exp(), 0.5, True, inplace=True), w * r)),
}


@pytest.mark.parametrize("fn", list(DROPOUT_NO_WRITE.values()), ids=list(DROPOUT_NO_WRITE))
def test_inplace_dropout_that_eager_does_not_write(fn):
    assert_matches_eager(fn, _leaves(7))


# eager's dropout with p == 1 multiplies by zero: inf and nan give nan, and the result keeps the input's
# autograd history (a zero gradient); Thunder's gave zeros without history (hostile probe 14)
@pytest.mark.parametrize("inplace", [False, True], ids=["out-of-place", "inplace"])
def test_dropout_p1_multiplies_by_zero_as_eager(inplace):
    def f(x):
        h = x * 1
        return torch.nn.functional.dropout(h, 1.0, True, inplace=inplace), h

    x = torch.tensor([1.0, float("inf"), float("nan")])
    for schedule in SCHEDULES:
        got = fusion_alias.jit(f, backend="reference", schedule=schedule)(x)
        torch.testing.assert_close(got, f(x), equal_nan=True)
    assert_matches_eager(lambda w, r: f(w * r)[0] + r, _leaves(3))


# augmented assignments Thunder 0.2.6's proxy lacks (Note [augmented assignments Thunder lacks]):
# code run on x (int64 unless the name says float) and y (an int64 divisor that is never zero)
AUGMENTED = {
    "ifloordiv-int": "x //= 2",
    "ifloordiv-float": "x = x.float() / 3; x //= 0.7",
    "ifloordiv-by-tensor": "x //= y",
    "imod-int": "x %= 3",
    "imod-float": "x = x.float() / 3; x %= 0.7",
    "imod-by-tensor": "x %= y",
    "iand-bool-mask": "m = x > 0; m &= x < 5; x = m",
    "ior-bool-mask": "m = x > 5; m |= x < 0; x = m",
    "ixor-int": "x ^= 5",
    "ilshift": "x <<= 2",
    "irshift": "x >>= 1",
    # through views: the write lands in the base, and a view read after it sees it
    "iand-through-a-view": "v = x[1:3]; v &= 1",
    "ifloordiv-then-view-read": "v = x[0]; x //= 2; x = x * 1 + v",
    # eager's tensor has no __imatmul__: x @= w rebinds x to x @ w and writes nothing
    "imatmul-rebinds": "w = x.float(); v = w; w @= torch.ones(4, 4); x = v + w",
    # x % y is eager's remainder (Note [``x % y`` as eager's remainder]): the divisor's sign
    "mod-int": "x = x % 3",
    "rmod-int": "x = 7 % y + x",
    "mod-by-tensor": "x = x % y",
    "mod-float": "x = x.float() / 3 % -0.7",
    "mod-of-a-written-view": "v = x[1]; v.add_(5); x = v % 4 + x % 2",
}


def _int_inputs():
    x = torch.tensor([[-7, 7, 5, 0], [9, -3, 2, 11], [1, -1, 4, -8]])
    return x, torch.tensor([3, -2, 1, 4])


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("code", list(AUGMENTED.values()), ids=list(AUGMENTED))
def test_augmented_assignment_thunder_lacks(code, schedule):
    namespace = {"torch": torch}
    exec("def f(x, y):\n    " + code.replace("; ", "\n    ") + "\n    return x", namespace)
    f = namespace["f"]
    jitted = fusion_alias.jit(f, backend="reference", schedule=schedule)
    for _ in range(2):
        (xe, ye), (xj, yj) = _int_inputs(), _int_inputs()
        want, got = f(xe, ye), jitted(xj, yj)
        torch.testing.assert_close(got, want, rtol=0, atol=0)
        torch.testing.assert_close(xj, xe, rtol=0, atol=0)


def test_augmented_assignment_plain_thunder_lacks():
    def f(x):
        x //= 2
        return x

    with pytest.raises(RuntimeError, match="__ifloordiv__ are not supported"):
        thunder.jit(f)(torch.arange(4))


@pytest.mark.parametrize(
    "code, message",
    [
        ("x //= 2.5", "can't be cast to the desired output type"),
        ("x %= 2.5", "can't be cast to the desired output type"),
    ],
    ids=["int-ifloordiv-float", "int-imod-float"],
)
def test_augmented_assignment_eager_rejects(code, message):
    namespace = {}
    exec("def f(x):\n    " + code + "\n    return x", namespace)
    f = namespace["f"]
    with pytest.raises(RuntimeError, match=message):
        f(torch.arange(4))
    with pytest.raises(Exception, match=message):
        fusion_alias.jit(f, backend="reference")(torch.arange(4))


def test_augmented_assignment_in_a_training_call():
    def f(w, r):
        m = w > 0
        m &= r < 0.5  # a mask built in place, used by values that need gradients
        m |= w < -1
        g = (w + r).detach()
        g //= 0.5  # (eager has no derivative for floor_divide_: only on a value that needs none)
        return w * m, g * r, (g % 0.3) * r  # (Thunder 0.2.6 has no gradient for remainder: a value without one)

    assert_matches_eager(f, _leaves(11))
