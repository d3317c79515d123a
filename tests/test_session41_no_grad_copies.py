"""Session 41 (helper-68): the ``requires_grad`` flag of a copy made under ``torch.no_grad()`` in a call that writes.

``with torch.no_grad(): t = b.t().reshape(16)`` of a ``b`` that requires grad copies in eager, and the copy requires
no grad; in a call that also writes in place it came back requiring grad (fuzz ``--generator calls --grad`` seed 35051
#14; autograd_functionalize.py, Note [a copying reshape made under no_grad]). ``.contiguous()`` under no_grad is a
copy or the tensor itself as the layout decides, and a returned one is refused now in a call that writes too, as it
was in one that writes nothing (refusals/no_grad_copies.py, Note [a contiguous copy made under no_grad, returned]).
Checked against eager on fresh inputs: values, written inputs, gradients and every output's ``requires_grad``, on
the reference schedules, first and cached call.
"""

import pytest
import torch

import fusion_alias
from fusion_alias import AliasInputError
from tests.grad_helpers import assert_matches_eager, assert_requires_grad_flags_match

SCHEDULES = ["reads-first", "writes-first"]


def reshape_copy_returned(b):
    b.detach().add_(1.0)
    with torch.no_grad():
        t = b.t().reshape(16)
    return t


def reshape_copy_returned_beside(b):
    b.detach().add_(1.0)
    with torch.no_grad():
        t = b.t().reshape(2, 8)
    return t, b * 2


def reshape_copy_read(b):
    b.detach().add_(1.0)
    with torch.no_grad():
        t = b.t().reshape(16)
    return t * 1, b * 2


def reshape_copy_viewed_again(b):
    b.detach().mul_(0.5)
    with torch.no_grad():
        t = b.t().reshape(2, 8)
        u = t.permute(1, 0)
    return u, b.sin()


def flatten_copy_returned(b):
    b.detach().add_(1.0)
    with torch.no_grad():
        t = b.t().flatten()
    return t, b * 2


def reshape_view_with_grad(b):  # (a reshape outside no_grad: the flag is eager's, requiring grad)
    b.detach().add_(1.0)
    t = b.t().reshape(16)
    return t * 2


def contiguous_copy_read(b):
    b.detach().add_(1.0)
    with torch.no_grad():
        t = b.t().contiguous()
    return t * 1, b * 2


PROGRAMS = [reshape_copy_returned, reshape_copy_returned_beside, reshape_copy_read, reshape_copy_viewed_again,
            flatten_copy_returned, reshape_view_with_grad, contiguous_copy_read]


def _make():
    w = (torch.arange(16.0).reshape(4, 4) / 7 - 1).requires_grad_()
    return [w], (w * 1,)


@pytest.mark.parametrize("fn", PROGRAMS, ids=lambda f: f.__name__)
def test_matches_eager(fn):
    assert_matches_eager(fn, _make)


@pytest.mark.parametrize("fn", PROGRAMS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("schedule", SCHEDULES)
def test_requires_grad_flags_are_eagers(fn, schedule):
    assert_requires_grad_flags_match(fn, _make, schedule)


def contiguous_copy_returned(b):
    b.detach().add_(1.0)
    with torch.no_grad():
        t = b.t().contiguous()
    return t, b * 2


def contiguous_itself_returned(b):
    b.detach().add_(1.0)
    with torch.no_grad():
        t = b.contiguous()
    return t, b * 2


@pytest.mark.parametrize("fn", [contiguous_copy_returned, contiguous_itself_returned], ids=lambda f: f.__name__)
@pytest.mark.parametrize("schedule", SCHEDULES)
def test_a_returned_contiguous_made_under_no_grad_is_refused(fn, schedule):
    fn(*_make()[1])  # eager runs it (a copy requiring no grad, or b itself requiring grad)
    with pytest.raises(AliasInputError, match=r"contiguous\(\) under torch.no_grad\(\)"):
        fusion_alias.jit(fn, backend="reference", schedule=schedule)(*_make()[1])


def test_without_gradients_a_returned_contiguous_runs():
    x = torch.arange(16.0).reshape(4, 4)
    want = contiguous_copy_returned(x.clone())
    got = fusion_alias.jit(contiguous_copy_returned, backend="reference")(x.clone())
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w)
        assert g.requires_grad == w.requires_grad
