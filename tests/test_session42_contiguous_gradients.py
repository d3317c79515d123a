"""``.contiguous()`` in a call that computes gradients: eager's copy, or eager's input itself, decided from the
call's layouts as the fusion pass decides it (eager_copies.py, Note [contiguous() with gradients, as eager
answers it]). Before session 42 the call was kept whole, an op that may return a view, and a read of its input
after a write through its result (or the other way round) was refused: "a is read after a write into memory it
shares with another tensor in a way fusion_alias cannot express as views of one tensor".
"""

from __future__ import annotations

import pytest
import torch

from tests.grad_helpers import assert_matches_eager, assert_matches_eager_with_flags


def _row_major():
    w = (torch.arange(24.0).view(4, 6) / 10).requires_grad_()
    return [w], [w * 1]


def _column_major():
    w = (torch.arange(24.0).view(6, 4) / 10).requires_grad_()
    return [w], [(w * 1).t()]


def copy_written_source_read(a):
    t = a.t().contiguous()  # a copy when a is row-major, a itself when a is column-major
    t.tanh_()
    return a.sum() + t.sum(), t


def same_written_source_read(a):
    t = a.contiguous()  # a itself when a is row-major, a copy when column-major
    t.mul_(2.0)
    return a * 1, t


def source_written_result_read(a):
    t = a.contiguous()
    a.mul_(3.0)
    return t * 1, a


def view_of_the_result_written(a):
    t = a[1:].contiguous()
    t.view(-1)[::2].zero_()
    return a.sum(), t


@pytest.mark.parametrize("make", [_row_major, _column_major], ids=["row-major", "column-major"])
@pytest.mark.parametrize("fn", [copy_written_source_read, same_written_source_read, source_written_result_read,
                                view_of_the_result_written])
def test_contiguous_then_a_write_matches_eager(fn, make):
    assert_matches_eager_with_flags(fn, make)


def test_the_attention_spelling_matches_eager():
    # q.transpose(1, 2).contiguous() scaled in place, the source read again for a residual
    def fn(q):
        h = q.transpose(1, 2).contiguous()
        h.mul_(0.125)
        return (h.softmax(-1) @ q).sum(), q * 2

    def make():
        w = (torch.arange(48.0).view(2, 4, 6) / 50).requires_grad_()
        return [w], [w * 1]

    assert_matches_eager(fn, make)


# Note [a repeat is a copy whatever its decomposition] (fresh_results.py): kept whole with gradients, a repeat's
# result read as one that may share its input's memory (Thunder decomposes it into views), and was refused
_REPEATS = {
    "repeat": lambda t: t.repeat(2, 1),
    "repeat-of-ones": lambda t: t.repeat(1, 1),  # (an identity view in Thunder's decomposition, a copy in eager)
    "tile": lambda t: t.tile((1, 2)),
    "repeat_interleave": lambda t: t.repeat_interleave(2, dim=0),
}


@pytest.mark.parametrize("kind", sorted(_REPEATS))
@pytest.mark.parametrize("written", ["result", "source"])
def test_a_repeat_then_a_write_matches_eager(kind, written):
    repeat = _REPEATS[kind]

    def fn(a):
        t = repeat(a[:, ::2])
        (t if written == "result" else a).tanh_()
        return a.sum() + t.sum(), t * 1

    assert_matches_eager_with_flags(fn, _row_major)
