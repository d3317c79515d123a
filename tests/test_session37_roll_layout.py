"""Session 37 (helper): the layout of ``torch.roll``'s result when a rolled dim's shift is a multiple of its size.

Found by the fresh default seed 20859 (#15, a ``layout`` program of session 35's kernel-layout form)::

    t0 = a.unsqueeze(0).permute(0, 3, 1, 2).roll(1, 0)    # a (4, 1, 6): t0 (1, 6, 4, 1), channels_last strides
    t1 = t0.flatten(1)
    t0.tanh_()
    return t1                                              # eager: t1 a copy, untouched; fusion_alias: tanh'd

Eager's CPU ``roll`` is ``cat([t.narrow(d, start, size - start), t.narrow(d, 0, start)], d)`` (one dim at a time):
where the shift is a multiple of the size (a size-1 dim always) the second piece is empty, the pieces' suggested
memory formats differ and ``cat`` allocates contiguous; eager_result_layouts.py gives every ``roll`` result the
operand's suggested memory format (channels_last here), so ``flatten`` was taken for a view and the write reached
``t1``, silently, under both schedules (plain ``thunder.jit`` right). Fixed (session 37, eager_result_layouts.py,
Note [roll's result is eager's cat of two narrows]): the result's layout is that decomposition's on meta operands,
eager's strides in 2999 of 3000 random cases (the other differs only in a size-1 dim's stride).
"""

import pytest
import thunder
import torch

import fusion_alias

SCHEDULES = ["reads-first", "writes-first"]


def _channels_last_like(shape):
    """A 4-D tensor of ``shape`` in channels_last order."""
    return torch.randn(shape).contiguous(memory_format=torch.channels_last)


# name -> (operand maker, roll arguments); the result written through ``flatten(1)``'s copy-or-view
WRONG = {
    "size-1-dim": (lambda: torch.randn(4, 1, 6).unsqueeze(0).permute(0, 3, 1, 2), (1, 0)),
    "size-1-last-dim": (lambda: torch.randn(4, 1, 6).unsqueeze(0).permute(0, 3, 1, 2), (1, 3)),
    "shift-equals-size": (lambda: _channels_last_like((2, 3, 4, 5)), (4, 2)),
    "shift-zero": (lambda: _channels_last_like((2, 3, 4, 5)), (0, 1)),
}
RIGHT = {
    "shift-one": (lambda: _channels_last_like((2, 3, 4, 5)), (1, 2)),
    "size-1-dim-operand-contiguous": (lambda: torch.randn(1, 6, 4, 1), (1, 0)),
    "channels-dim": (lambda: torch.randn(4, 1, 6).unsqueeze(0).permute(0, 3, 1, 2), (1, 1)),
}


def _prog(shift, dim):
    def prog(a):
        t0 = a.roll(shift, dim)
        t1 = t0.flatten(1)
        t0.tanh_()
        return t1, t0

    return prog


def _check(make, args, schedule):
    torch.manual_seed(0)
    a = make()
    prog = _prog(*args)
    want = prog(a.clone(memory_format=torch.preserve_format))
    got = fusion_alias.jit(prog, backend="reference", schedule=schedule)(a.clone(memory_format=torch.preserve_format))
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w)


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("case", list(WRONG))
def test_a_roll_that_moves_nothing_is_contiguous(case, schedule):
    _check(*WRONG[case], schedule)


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("case", list(RIGHT))
def test_a_roll_that_moves_keeps_the_suggested_format(case, schedule):
    _check(*RIGHT[case], schedule)


@pytest.mark.parametrize("case", list(WRONG))
def test_plain_thunder_is_right(case):
    make, args = WRONG[case]
    torch.manual_seed(0)
    a = make()
    prog = _prog(*args)
    want = prog(a.clone(memory_format=torch.preserve_format))
    got = thunder.jit(prog)(a.clone(memory_format=torch.preserve_format))
    torch.testing.assert_close(got[0], want[0])


def test_the_meta_replay_gives_eagers_strides():
    """Note [roll's result is eager's cat of two narrows]: the replay on meta operands against eager's CPU
    ``roll`` on 600 random layouts, shifts and dims (one dim, several, none); a size-1 dim's stride addresses
    nothing and may differ."""
    import random

    from fusion_alias.eager_result_layouts import _cpu_roll

    rng = random.Random(37)
    for _ in range(600):
        nd = rng.choice((2, 3, 4))
        base = torch.randn(*[rng.choice((1, 2, 3, 4)) for _ in range(nd)])
        perm = list(range(nd))
        rng.shuffle(perm)
        t = base.permute(perm) if rng.random() < 0.6 else base
        dims = tuple(rng.sample(range(nd), rng.choice((0, 1, 2))))
        shifts = tuple(rng.randint(-5, 5) for _ in dims) or (rng.randint(-5, 5),)
        want = torch.roll(t, shifts, dims)
        got = _cpu_roll(torch.empty_strided(t.shape, t.stride(), device="meta"), shifts, dims)
        assert got.shape == want.shape
        assert [s for s, n in zip(got.stride(), got.shape) if n != 1] == [s for s, n in zip(want.stride(), want.shape) if n != 1], (t.shape, t.stride(), shifts, dims)
