"""An input that is a detached alias of an input that requires grad (``f(x0, x0.detach()[1])``): eager's
autograd does not relate the two, and their memory is one. leaf_views.py, Note [an input that is a detached
alias of one that requires grad]. Refused before session 42 (two thirds of the nograd fuzz generator's
``--grad`` runs): "read after a write into memory it shares with another tensor in a way fusion_alias
cannot express as views of one tensor".
"""

from __future__ import annotations

import pytest
import torch

import fusion_alias
from fusion_alias.backends.reference import SCHEDULES
from tests.grad_helpers import assert_matches_eager_with_flags


def _leaf():
    return (torch.arange(12.0).view(3, 4) / 7 - 0.5).clone().requires_grad_()


def _leaf_and(alias):
    """The leaf and an alias of its memory made by ``alias`` (fresh each call)."""

    def make():
        x0 = _leaf()
        return [x0], [x0, alias(x0)]

    return make


def _non_leaf_and(alias):
    def make():
        w = _leaf()
        h = w * 1  # eager allows writing into this one with grad
        return [w], [h, alias(h)]

    return make


DETACHED_ROW = lambda t: t.detach()[1]  # noqa: E731
DATA_ROW = lambda t: t.data[1]  # noqa: E731  (shares the memory, not the version counter)
DETACHED_WHOLE = lambda t: t.detach()  # noqa: E731
DETACHED_COLUMN = lambda t: t.detach().t()[2]  # noqa: E731  (strided)


def no_grad_write_then_read(h, x):
    with torch.no_grad():
        x.add_(1.0)
    return (h * h).sum(), h * 2


def grad_mode_write_of_a_constant(h, x):
    x.mul_(3.0)  # x requires no grad and neither does 3.0: nothing for autograd to record
    return (h * 2).sum(), x * 1


def write_read_alias_and_return_it(h, x):
    with torch.no_grad():
        x.sub_(0.25)
    return h.tanh(), x


def detached_read_after_a_write_of_the_other(h, x):
    h.mul_(2.0)  # h (not a leaf) written with grad: x sees the values, with no gradient
    return x * 3, h.exp()


@pytest.mark.parametrize("alias", [DETACHED_ROW, DATA_ROW, DETACHED_WHOLE, DETACHED_COLUMN],
                         ids=["detach-row", "data-row", "detach-whole", "detach-column"])
@pytest.mark.parametrize("fn", [no_grad_write_then_read, grad_mode_write_of_a_constant,
                                write_read_alias_and_return_it])
def test_write_through_a_detached_alias_of_a_leaf_matches_eager(fn, alias):
    assert_matches_eager_with_flags(fn, _leaf_and(alias))


@pytest.mark.parametrize("alias", [DETACHED_ROW, DETACHED_WHOLE], ids=["detach-row", "detach-whole"])
@pytest.mark.parametrize("fn", [no_grad_write_then_read, grad_mode_write_of_a_constant,
                                detached_read_after_a_write_of_the_other])
def test_detached_alias_of_a_non_leaf_matches_eager(fn, alias):
    assert_matches_eager_with_flags(fn, _non_leaf_and(alias))


def test_the_detached_alias_keeps_requiring_no_grad_after_the_call():
    # the write-back into x runs under no_grad: eager's x never gets a history
    def fn(h, x):
        with torch.no_grad():
            x.add_(1.0)
        return (h * h).sum()

    for schedule in SCHEDULES:
        x0 = _leaf()
        x = x0.detach()[1]
        fusion_alias.jit(fn, backend="reference", schedule=schedule)(x0, x).backward()
        assert not x.requires_grad and x.grad_fn is None
        want = _leaf()
        with torch.no_grad():
            want[1] += 1
        torch.testing.assert_close(x0.detach(), want.detach())
        torch.testing.assert_close(x0.grad, 2 * want.detach())


def test_a_value_that_requires_grad_written_into_the_detached_alias_is_still_refused():
    # eager's x then carries w's gradient while h does not: not expressible as one base, refused as before
    def fn(h, x, w):
        x.add_(w)
        return (h * 1).sum() + (x * x).sum()

    x0 = _leaf()
    w = torch.ones(4, requires_grad=True)
    with pytest.raises(fusion_alias.AliasInputError, match="cannot express as views of one tensor"):
        fusion_alias.jit(fn)(x0, x0.detach()[1], w)


def test_a_saved_value_written_through_the_detached_alias_raises_as_eager_does():
    # detach() shares the version counter: eager raises at backward; fusion_alias refuses at the call
    def fn(h, x):
        t = h * h  # saves h
        with torch.no_grad():
            x.add_(1.0)
        return t.sum()

    x0 = _leaf()
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        fn(x0, x0.detach()[1]).backward()
    x0 = _leaf()
    with pytest.raises(fusion_alias.AliasInputError, match="saves h for the backward"):
        fusion_alias.jit(fn)(x0, x0.detach()[1])
