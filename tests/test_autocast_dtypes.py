"""Ops under torch.autocast: eager's dtypes, or a refusal that names the op (fusion_alias/autocast_dtypes.py).

Thunder 0.2.6 applies autocast to matmul, linear, the convolutions and scaled_dot_product_attention only; plain
``thunder.jit`` returns float32 for ``torch.mm`` under ``torch.autocast("cpu", dtype=torch.bfloat16)`` where eager
returns bfloat16 (session 24 hand probe). These tests fail without the check: the refused programs return a
result of another dtype.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import fusion_alias
from fusion_alias.autocast_dtypes import AutocastDtypeError
from fusion_alias.backends.reference import SCHEDULES
from grad_helpers import assert_matches_eager

BF16 = torch.bfloat16


def _inside(op):
    def f(a, b):
        with torch.autocast("cpu", dtype=BF16):
            return op(a, b)

    return f


REFUSED = {
    "mm": (lambda a, b: torch.mm(a, b), torch.float32),
    "bmm": (lambda a, b: torch.bmm(a[None], b[None]), torch.float32),
    "addmm": (lambda a, b: torch.addmm(a, a, b), torch.float32),
    "tensordot": (lambda a, b: torch.tensordot(a, b, 1), torch.float32),
    "prelu": (lambda a, b: F.prelu(a, b[0, :1]), torch.float32),
    "prod": (lambda a, b: torch.prod(a), BF16),  # float32 in eager's autocast, bfloat16 in Thunder
    "mse_loss": (lambda a, b: F.mse_loss(a, b), BF16),
    "cross_entropy": (lambda a, b: F.cross_entropy(a, torch.tensor([0, 1, 2, 3])), BF16),
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_an_op_thunder_does_not_autocast_is_refused(name):
    op, dtype = REFUSED[name]
    a, b = torch.randn(4, 4, dtype=dtype), torch.randn(4, 4, dtype=dtype)
    eager = _inside(op)(a, b)
    with pytest.raises(AutocastDtypeError, match=r"fusion_alias: .* under torch\.autocast\('cpu'") as err:
        fusion_alias.jit(_inside(op))(a, b)
    assert str(eager.dtype) in str(err.value)  # eager's dtype, named


def test_the_autocast_the_call_runs_under_counts_too():
    def f(a, b):
        return torch.mm(a, b)

    with torch.autocast("cpu", dtype=BF16), pytest.raises(AutocastDtypeError, match="torch.bfloat16"):
        fusion_alias.jit(f)(torch.randn(4, 4), torch.randn(4, 4))
    # the same function outside autocast runs, as eager
    a, b = torch.randn(4, 4), torch.randn(4, 4)
    torch.testing.assert_close(fusion_alias.jit(f)(a, b), f(a, b))


def _fresh():
    torch.manual_seed(0)
    x, w = torch.randn(4, 4), torch.randn(4, 4)
    return [], [x, w]


def test_ops_thunder_autocasts_run_as_eager_beside_an_aliased_write():
    def f(x, w):
        v = x[0]
        with torch.autocast("cpu", dtype=BF16):
            y = x @ w
            z = F.linear(x, w)
            s = torch.softmax(y, 1)
            c = torch.cat([y, x])  # promotes: float32, as in eager
        x.add_(y.float())
        return v * 2, y, z, s, c

    assert_matches_eager(f, _fresh)


def _mm_of_cast_operands(x, w):
    return torch.mm(x.to(BF16), w.to(BF16))


def _mm_with_autocast_disabled(x, w):
    with torch.autocast("cpu", enabled=False):
        return torch.mm(x, w)


@pytest.mark.parametrize("mm", [_mm_of_cast_operands, _mm_with_autocast_disabled])
def test_an_op_eager_autocast_leaves_alone_runs(mm):
    """``mm`` under autocast on operands already in its dtype, or in an autocast(enabled=False) inside it:
    eager's autocast changes nothing, so Thunder's dtype is eager's."""

    def f(x, w):
        with torch.autocast("cpu", dtype=BF16):
            y = mm(x, w)
        x.mul_(2)
        return y

    assert_matches_eager(f, _fresh)


def test_with_gradients_the_op_is_refused_and_autocast_ops_run():
    def refused(x, w):
        with torch.autocast("cpu", dtype=BF16):
            return torch.mm(x, w)

    def runs(x, w):
        with torch.autocast("cpu", dtype=BF16):
            y = x @ w
        return y.float().sum(0) * w[0]

    def fresh():
        torch.manual_seed(0)
        x = torch.randn(4, 4, requires_grad=True)
        return [x], [x, torch.randn(4, 4)]

    with pytest.raises(AutocastDtypeError, match="torch.spmm"):
        fusion_alias.jit(refused)(*fresh()[1])
    assert_matches_eager(runs, fresh)


def test_a_block_of_common_ops_under_autocast_runs_as_eager():
    """No needless refusal of the ops a model runs under autocast (eager's signature differs from Thunder's for
    several: ``F.batch_norm`` with None statistics, ``reshape`` with sizes one by one, ``relu(x, False)``),
    beside a write of an input that a view of it is read after."""

    def f(x, w):
        v = x[0]
        with torch.autocast("cpu", dtype=BF16):
            h = F.layer_norm(x, (4,))
            q = F.gelu(F.linear(h, w))
            a = torch.softmax(q @ q.mT / 2, -1) @ q
            b = F.batch_norm(x, None, None, training=True).reshape(2, 8).relu().reshape(4, 4)
            e = F.embedding(torch.tensor([0, 3]), x)
            s = torch.cat([a.float(), b]).sum(0) + e.sum(0)
        x.add_(a.float())
        return s, v * 2, a

    # bfloat16 intermediates may round apart (a fused region, Thunder's decompositions): values compared as
    # the fuzzer compares bfloat16 (Note [low-precision tolerance]), dtypes exactly
    want_out, want_args = _eager_and_inputs(f)
    for schedule in SCHEDULES:
        jitted = fusion_alias.jit(f, backend="reference", schedule=schedule)
        for _ in range(2):
            _, args = _fresh()
            got = jitted(*args)
            for g, w in zip([*got, *args], [*want_out, *want_args]):
                torch.testing.assert_close(g, w, rtol=4e-2, atol=4e-2)


def _eager_and_inputs(f):
    _, args = _fresh()
    return f(*args), args


def test_einsum_runs_as_its_decomposition_where_that_casts_and_is_refused_where_it_does_not():
    """``einsum`` is run by no executor whole: Thunder runs its decomposition, whose dtype is checked against
    eager's (autocast_dtypes.py, Note [autocast: eager's dtype or a refusal]). A contraction decomposes into
    conversions to bfloat16 and a ``matmul``: bfloat16, as eager (refused needlessly before session 25). An
    elementwise one (``ij,ij->i``) decomposes into a float32 multiply and sum, where eager's einsum runs a
    ``bmm`` in bfloat16: refused."""

    def contraction(x, w):
        v = x[0]
        with torch.autocast("cpu", dtype=BF16):
            x.mul_(2)
            a = torch.einsum("ij,kj->ik", x, w)
            c = torch.einsum("bij,bjk->bik", x[None], w.mT[None])
        return a, c, v * 1

    want_out, want_args = _eager_and_inputs(contraction)
    assert [t.dtype for t in want_out] == [BF16, BF16, torch.float32]
    for schedule in SCHEDULES:
        jitted = fusion_alias.jit(contraction, backend="reference", schedule=schedule)
        for _ in range(2):
            _, args = _fresh()
            got = jitted(*args)
            for g, w in zip([*got, *args], [*want_out, *want_args]):
                torch.testing.assert_close(g, w, rtol=4e-2, atol=4e-2)  # dtypes exactly

    def elementwise(x, w):
        with torch.autocast("cpu", dtype=BF16):
            return torch.einsum("ij,ij->i", x, w)

    _, args = _fresh()
    assert elementwise(*args).dtype == BF16
    with pytest.raises(AutocastDtypeError, match=r"torch\.einsum .*torch\.bfloat16, Thunder 0\.2\.6 in torch\.float32"):
        fusion_alias.jit(elementwise)(*args)
