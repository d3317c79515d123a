"""Session 40 (helper): ``conj()`` of a detached tensor is detached (saved_versions.py, Note [conj of a detached
tensor is detached]).

``with torch.no_grad(): t = a.detach().conj().view(-1)`` then ``t.copy_(c)`` of a ``c`` that requires no grad, ``a``
requiring grad, was refused saying eager raises ("A view was created in no_grad mode and is being modified inplace
with grad mode enabled"): eager runs it (fuzz ``--generator dtype --grad`` seed 40162 #57). Checked against eager
on fresh inputs (outputs, written arguments, gradients; every reference schedule, first and cached call), and the
neighbour eager refuses (a value that requires grad) stays refused.
"""

import pytest
import torch

import fusion_alias
from fusion_alias import AliasInputError
from tests.grad_helpers import assert_matches_eager

SCHEDULES = ["reads-first", "writes-first"]


def conj_view_written(a, c):
    with torch.no_grad():
        t = a.detach().conj().view(-1)
    return t.copy_(c), a * 2


def resolve_conj_view_written(a, c):
    with torch.no_grad():
        t = a.detach().resolve_conj().view(-1)
    t.add_(c)
    return a * 2, t


def conj_written_without_no_grad(a, c):
    t = a.detach().conj()
    t.add_(c)
    return a * 2


PROGRAMS = [conj_view_written, resolve_conj_view_written, conj_written_without_no_grad]


@pytest.mark.parametrize("fn", PROGRAMS, ids=lambda f: f.__name__)
def test_matches_eager(fn):
    def make():
        w = torch.arange(1.0, 5.0).requires_grad_()
        return [w], (w * 1, torch.arange(4.0))

    assert_matches_eager(fn, make)


def value_that_requires_grad_into_conj_view(a, c):
    with torch.no_grad():
        t = a.detach().conj().view(-1)
    return t.copy_(c * 2)


def test_a_value_that_requires_grad_still_refused():
    with pytest.raises(RuntimeError, match="no_grad mode"):
        value_that_requires_grad_into_conj_view(torch.zeros(4), torch.ones(4, requires_grad=True) * 1)
    for schedule in SCHEDULES:
        with pytest.raises(AliasInputError):
            fusion_alias.jit(value_that_requires_grad_into_conj_view, schedule=schedule)(
                torch.zeros(4), torch.ones(4, requires_grad=True) * 1)
