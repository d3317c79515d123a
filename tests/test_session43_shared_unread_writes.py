"""Session 43 (helper-71): a write into memory another input shares, whose new value nothing the loss reaches
reads, gets eager's gradient, not Thunder's zero cotangent times the write's partials (memory_reach.py, Note [an
unread write into memory another input shares, read by nothing the loss reaches]; zero_cotangents.py, its
linearity rule and the ops of one flat base).

Fuzz ``--special-values --grad --generator fresh`` seed 70102 #9 (``a.copy_(a.cumprod(1))`` with ``a`` and ``b``
one tensor) and #10 (``a.add_(a.norm(dim=0, keepdim=True))`` with ``b = a[:, 1]``): eager's backward never visits
the writes (every read the loss reaches came before them), ours gave the leaf NaN (``cumprod_vjp``/``norm_vjp`` of
the write-back's zero cotangent, inf and 0/0 among the values). Checked against eager on fresh inputs: outputs,
inputs after the call, every leaf's gradient (None only where eager's is None, NaN equal to NaN), outputs'
``requires_grad``, on every reference schedule (reads-first, writes-first, reverse-writes), first and cached call.
"""

import pytest
import torch

import fusion_alias
from tests.nan_gradient_checks import run_with_random_loss
from tests.grad_helpers import assert_runs_like_eager, assert_same_nested

INF, NAN = float("inf"), float("nan")


def cumprod_one_tensor(a, b, c):  # seed 70102 #9, reduced: a and b one tensor
    t0 = a.cumsum(-2)
    b[0] = (b.roll(1))[3]
    a.copy_(a.cumprod(1))
    return t0


def norm_of_a_column_view(a, b):  # seed 70102 #10, reduced: b = a[:, 1]
    t0 = b * 2
    a.add_(a.norm(dim=0, keepdim=True))
    return t0


def exp_after_the_read(a, b):  # a and b one tensor: the read comes before the write
    t0 = a * 2
    b.exp_()
    return t0


def _x():
    return [[0.9752, -0.4334, -0.7573, -0.2650], [-0.1907, 0.8555, -0.1322, NAN],
            [INF, INF, -0.5567, -0.2111], [0.2944, 0.1161, -0.0526, 0.0]]


def _one_tensor(n=3):
    def make():
        leaf = torch.tensor(_x(), requires_grad=True)
        other = torch.tensor([[0.5, -1.0, 2.0, 0.25]] * 4, requires_grad=True)
        x = leaf * 1
        return [leaf, other], [x, x, other * 1][:n]
    return make


def _column_view():
    leaf = torch.tensor([[0.0, 1.0, INF, 2.0, 0.0, 3.0], [0.0, -1.0, 1.0, NAN, 0.0, 0.5],
                         [0.0, 2.0, 1.0, 1.0, 0.0, -2.0], [0.0, 0.5, 0.5, 1.0, 0.0, 1.0]], requires_grad=True)
    x = leaf * 1
    return [leaf], [x, x[:, 1]]


CASES = {
    "cumprod_one_tensor": (cumprod_one_tensor, _one_tensor()),
    "norm_of_a_column_view": (norm_of_a_column_view, _column_view),
    "exp_after_the_read": (exp_after_the_read, _one_tensor(2)),
}


_run = run_with_random_loss  # (tests/nan_gradient_checks.py)


@pytest.mark.parametrize("case", sorted(CASES))
def test_matches_eager(case):
    fn, make = CASES[case]
    want = _run(fn, make)
    assert all(g is None or bool(torch.isfinite(g).all()) for g in want[2]), want[2]  # (eager's: finite)
    assert_runs_like_eager(fn, _run, make, compare=assert_same_nested)


def test_the_fuzz_leaf_is_finite():
    """seed 70102 #9 as the fuzzer runs it: the leaf behind a and b had NaN in rows 1 and 2."""
    fn, make = CASES["cumprod_one_tensor"]
    got = _run(fusion_alias.jit(fn, backend="reference"), make)
    assert bool(torch.isfinite(got[2][0]).all()) and got[2][1] is None


def exp_then_read_the_other(a, b):
    b.exp_()
    return a * 2


def test_a_read_after_the_write_keeps_eagers_nan_across_the_cache():
    """Guard (passes on the tree before this session too): ``a = base[0]``, ``b = base[1]`` do not overlap, so the
    call reuses the program compiled for two tensors; eager reaches ``b``'s write through ``base`` after it
    (``a * 2`` reads base's new history: ``0 * exp(inf)`` is eager's NaN), and that must not be dropped."""
    def make(shared):
        def inputs():
            la = torch.tensor([0.5, -INF, 2.0, 0.0], requires_grad=True)
            lb = torch.tensor([INF, 0.5, -INF, 3.0], requires_grad=True)
            if shared:
                base = torch.stack([la, lb]) * 1
                return [la, lb], [base[0], base[1]]
            return [la, lb], [la * 1, lb * 1]
        return inputs

    jitted = fusion_alias.jit(exp_then_read_the_other, backend="reference")
    for shared in (False, True, False, True):
        want = _run(exp_then_read_the_other, make(shared))
        got = _run(jitted, make(shared))
        assert_same_nested(got[:2] + got[3:], want[:2] + want[3:], f"shared={shared}")
        if shared:
            torch.testing.assert_close(got[2][1], want[2][1], equal_nan=True)
            assert bool(want[2][1].isnan().any())
