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


def test_training_call():
    def f(w, r):
        h = w * 2
        h[0].fill_(1.0)
        h[1:].copy_(r)
        return h * w

    def make_inputs():
        g = torch.Generator().manual_seed(5)
        w = torch.randn(3, 4, generator=g).requires_grad_()
        r = torch.randn(4, generator=g).requires_grad_()
        return [w, r], [w, r]

    assert_matches_eager(f, make_inputs)


def test_plain_thunder_is_left_as_it_is():
    # the lookasides are the executor's: thunder.jit without fusion_alias's executor still lacks fill_
    def f(x):
        return x.fill_(1.0)

    with pytest.raises(AttributeError, match="fill_"):
        thunder.jit(f)(torch.zeros(2))
