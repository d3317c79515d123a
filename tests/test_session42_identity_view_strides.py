"""Session 42 (helper-69): ``b.contiguous()`` of a contiguous ``b`` whose size-1 dim has a stride of its own keeps
that stride in the layout replay (layouts.py, Note [an identity view keeps a size-1 dim's stride]).

Fuzz ``--saving-ops`` seed 41106 #25 (layout): ``t0 = b.contiguous()`` of ``b = x1[:, ::2]`` (strides (6, 12, 1)),
then ``torch.hstack`` of two ``t0.unsqueeze(0).permute(0, 3, 1, 2)`` and ``view(-1)`` of it: eager's ``hstack``
result is contiguous and the view runs; the replay took ``t0`` as (6, 6, 1), the permuted operands as
channels_last, the result as channels_last, and refused the view with eager's "view size is not compatible"
where eager runs (plain ``thunder.jit`` runs). Checked against eager on fresh inputs, reference schedules, first
and cached call, and with gradients; the fuzz program itself, which writes that memory, is refused by name now
(the view is eager's only through a layout fusion regions do not keep) where it raised eager's error before.
"""

import pytest
import torch

import fusion_alias
from fusion_alias.backends.reference import SCHEDULES
from tests.grad_helpers import assert_matches_eager


def stacked_view(b):
    t0 = b.contiguous()
    t1 = torch.hstack([t0.unsqueeze(0).permute(0, 3, 1, 2), t0.unsqueeze(0).permute(0, 3, 1, 2)])
    return t1.view(-1)


def stacked_view_after_zero(b):  # seed 41106 #25 in brief: t0 is b itself, zeroed with it
    t0 = b.contiguous()
    b.zero_()
    t1 = torch.hstack([t0.unsqueeze(0).permute(0, 3, 1, 2), t0.unsqueeze(0).permute(0, 3, 1, 2)])
    t2 = t1.view(-1)
    t1.mul_(2.0)
    return t2.sin(), t0, t1


def cat_of_permuted(b):
    t0 = b.contiguous()
    p = t0.unsqueeze(0).permute(0, 3, 1, 2)
    return torch.cat([p, p * 2], 1).flatten()


def written_through_the_view(b):
    t0 = b.contiguous()
    t1 = torch.hstack([t0.unsqueeze(0).permute(0, 3, 1, 2), t0.unsqueeze(0).permute(0, 3, 1, 2)])
    t2 = t1.view(-1)
    t2.add_(1)
    return t1, b


PROGRAMS = [stacked_view, cat_of_permuted]
# (with a write of that memory the view is eager's only because of a layout fusion regions do not keep: the
# replayed unsqueeze at run time has (24, 6, 6, 1), so the run-time hstack is channels_last: a clear refusal)
WRITTEN = [stacked_view_after_zero, written_through_the_view]


def _arg():
    return (torch.arange(24.0).reshape(4, 1, 6) / 7)[:, ::2]


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("fn", PROGRAMS, ids=lambda f: f.__name__)
def test_matches_eager(fn, schedule):
    want = fn(_arg())
    want = want if isinstance(want, tuple) else (want,)
    jitted = fusion_alias.jit(fn, backend="reference", schedule=schedule)
    for _ in range(2):
        arg = _arg()
        got = jitted(arg)
        got = got if isinstance(got, tuple) else (got,)
        for g, w in zip(got, want):
            torch.testing.assert_close(g, w)
            assert g.stride() == w.stride()
        torch.testing.assert_close(arg, _arg_after(fn))


@pytest.mark.parametrize("fn", WRITTEN, ids=lambda f: f.__name__)
def test_written_is_refused_by_name(fn):
    fn(_arg())  # eager runs
    with pytest.raises(RuntimeError, match="not supported"):
        fusion_alias.jit(fn, backend="reference")(_arg())


def _arg_after(fn):
    arg = _arg()
    fn(arg)
    return arg


@pytest.mark.parametrize("fn", [stacked_view, cat_of_permuted], ids=lambda f: f.__name__)
def test_with_gradients(fn):
    def make():
        leaf = (torch.arange(24.0).reshape(4, 1, 6) / 7).requires_grad_()
        return [leaf], [(leaf * 1)[:, ::2]]

    assert_matches_eager(fn, make)
