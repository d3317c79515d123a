"""Session 40 (helper): ``torch.kron`` saves its operands where eager's version check does not look.

Eager's ``torch.kron`` multiplies ``_unsafe_view``s of its operands, which do not share their base's
version counter: a later in-place write into an operand is read by eager's backward with no error.
fusion_alias returned the gradient of the values kron read: a different gradient, silently (session 40
hand probe). Such a call is now refused (untracked_saves.py, Note [saves eager's version check does not
track]); the table is re-derived in eager here, and the neighbours that eager and fusion_alias agree on
still run and match eager (outputs, written arguments, gradients; every reference schedule, first and
cached call).
"""

import itertools

import pytest
import torch

import fusion_alias
from fusion_alias import AliasInputError
from fusion_alias.refusals.untracked_saves import UNTRACKED_SAVES
from tests.grad_helpers import assert_matches_eager

SCHEDULES = ["reads-first", "writes-first"]


def _leaf(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed)).requires_grad_()


# ---- the table, re-derived in eager

def _gradient_moves(requiring, written, layout):
    """Whether eager's gradient of ``kron(a, b)`` changes when operand ``written`` is scaled in place after
    the op (no error raised), ``requiring`` the operands that require grad."""
    leaves = [torch.randn(2, 3, dtype=torch.double, generator=torch.Generator().manual_seed(i)) for i in range(2)]
    leaves = [t.requires_grad_(i in requiring) for i, t in enumerate(leaves)]
    ops = [(t.mT * 1).mT if layout == "transposed" else t * 1 for t in leaves]
    y = torch.kron(*ops)
    weights = torch.arange(y.numel(), dtype=y.dtype).reshape(y.shape)
    wanted = [t for t in leaves if t.requires_grad]
    before = torch.autograd.grad((y * weights).sum(), wanted, retain_graph=True)
    with torch.no_grad():
        ops[written].mul_(2)
    after = torch.autograd.grad((y * weights).sum(), wanted)  # (eager raises nothing)
    return not all(torch.equal(p, q) for p, q in zip(before, after))


@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
def test_the_table_matches_eager(layout):
    (name, positions, ranks), saves = next(iter(UNTRACKED_SAVES.items()))
    assert name == "kron" and positions == (0, 1)
    for k in (1, 2):
        for requiring in itertools.combinations(positions, k):
            for written in positions:
                want = any(what == written and any(p in requiring for p in needs) for what, needs in saves)
                assert _gradient_moves(set(requiring), written, layout) == want, (requiring, written)


# ---- refused: a write after the save, its backward live

def kron_self_then_write(w):
    x = w * 2
    y = torch.kron(x, x)
    x.add_(1)
    return y


def kron_then_write_left(w, v):
    a = w * 2
    y = torch.kron(a, v * 1)
    a.mul_(3)
    return y


def kron_then_write_right_view(w, v):
    b = v * 1
    y = torch.kron(w, b)
    b[0].zero_()
    return y.sin()


def kron_of_constant_then_write_it(w, c):  # c requires no grad, w does: kron saves c
    y = torch.kron(c, w)
    c.add_(1)
    return y


def kron_then_write_under_no_grad(w):
    x = w * 2
    y = torch.kron(x, w)
    with torch.no_grad():
        x.mul_(2)
    return y


REFUSED = [
    (kron_self_then_write, lambda: (_leaf(3),)),
    (kron_then_write_left, lambda: (_leaf(2, 2), _leaf(2, 3, seed=1))),
    (kron_then_write_right_view, lambda: (_leaf(3), _leaf(2, seed=1))),
    (kron_of_constant_then_write_it, lambda: (_leaf(3), torch.randn(2))),
    (kron_then_write_under_no_grad, lambda: (_leaf(3),)),
]


@pytest.mark.parametrize("fn, make", REFUSED, ids=[f.__name__ for f, _ in REFUSED])
def test_refused_where_eager_reads_the_written_values(fn, make):
    args = make()
    out = fn(*args)  # eager runs: no error, at the call or at backward
    out.sum().backward()
    for schedule in SCHEDULES:
        with pytest.raises(AliasInputError, match="kron saves .* does not raise there"):
            fusion_alias.jit(fn, schedule=schedule)(*make())


# ---- neighbours that run: eager's gradient is the program's own

def kron_after_write(w):
    x = w * 2
    x.add_(1)
    return torch.kron(x, x)


def kron_of_clones_then_write(w):
    x = w * 2
    y = torch.kron(x.clone(), x.clone())
    x.add_(1)
    return y, x


def kron_write_unsaved_operand(w, c):  # c requires no grad: kron saves no view of w
    x = w * 2
    y = torch.kron(c, x)
    x.add_(1)
    return y, x


def kron_backward_not_live(w):  # y is not returned: kron's backward never runs
    x = w * 2
    y = torch.kron(x, x)
    x.add_(1)
    return x * y.sum().detach()


def kron_without_gradients(a, b):
    y = torch.kron(a, b)
    a.add_(1)
    return y, a


RUN = [
    (kron_after_write, lambda: ([w := _leaf(3)], (w,))),
    (kron_of_clones_then_write, lambda: ([w := _leaf(3)], (w,))),
    (kron_write_unsaved_operand, lambda: ([w := _leaf(3)], (w, torch.randn(2, generator=torch.Generator().manual_seed(1))))),
    (kron_backward_not_live, lambda: ([w := _leaf(3)], (w,))),
]


@pytest.mark.parametrize("fn, make", RUN, ids=[f.__name__ for f, _ in RUN])
def test_eager_valid_neighbours_match_eager(fn, make):
    assert_matches_eager(fn, make)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_without_gradients_matches_eager(schedule):
    ae, be = torch.randn(2, 2), torch.randn(3)
    aj, bj = ae.clone(), be.clone()
    want = kron_without_gradients(ae, be)
    got = fusion_alias.jit(kron_without_gradients, schedule=schedule)(aj, bj)
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w)
    torch.testing.assert_close(aj, ae)
