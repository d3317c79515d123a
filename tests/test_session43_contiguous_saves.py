"""Session 43: a ``contiguous()`` that eager answers with its input itself is that tensor for the refusals of eager's
autograd errors too (saved_versions.py, ``selves``): its memory and version counter are the input's.

Found when ``x.ravel()`` became ``x.contiguous().view(-1)`` (ravel_spelling.py): fuzz ``--saving-ops --grad`` seed
41108 #84 (``with torch.no_grad(): t1 = b.ravel()``, then ``b.neg_()``, then a read of ``t1``: eager raises, "A view was
created in no_grad mode and its base ... has been modified inplace") returned. The same check missed ``y = b.sin();
b.contiguous().mul_(2)`` since session 42 (eager raises at backward: sin saved ``b``, which the write modified).
"""

import pytest
import torch

import fusion_alias
from tests.grad_helpers import assert_matches_eager


def sin_then_write_through_contiguous(b):
    y = b.sin()
    b.contiguous().mul_(2)
    return y


def sin_then_write_through_ravel(b):
    y = b.sin()
    b.ravel().mul_(2)
    return y


def no_grad_ravel_then_write(b):
    with torch.no_grad():
        t1 = b.ravel()
    b.neg_()
    return b, t1 * 1


def no_grad_contiguous_then_write(b):  # eager's contiguous() is b itself, not a view: eager runs
    with torch.no_grad():
        t1 = b.contiguous()
    b.neg_()
    return b, t1 * 1


def _contiguous():
    leaf = (torch.arange(6.0).reshape(2, 3) / 4 - 0.5).requires_grad_()
    return [leaf], [leaf * 1]


def _transposed():  # contiguous() and ravel() copy: nothing eager refuses
    leaf = (torch.arange(6.0).reshape(2, 3) / 4 - 0.5).requires_grad_()
    return [leaf], [(leaf * 1).t()]


@pytest.mark.parametrize("fn, match", [
    (sin_then_write_through_contiguous, "sin saves"),
    (sin_then_write_through_ravel, "sin saves"),
    (no_grad_ravel_then_write, "view made under torch.no_grad"),
], ids=["contiguous_saved", "ravel_saved", "ravel_no_grad_view"])
def test_refused_as_eager_raises(fn, match):
    with pytest.raises(RuntimeError):
        outs = fn(*_contiguous()[1])
        sum(o.sum() for o in (outs if isinstance(outs, tuple) else (outs,))).backward()
    with pytest.raises(fusion_alias.AliasInputError, match=match):
        fusion_alias.jit(fn, backend="reference")(*_contiguous()[1])


@pytest.mark.parametrize("fn", [sin_then_write_through_contiguous, sin_then_write_through_ravel,
                                no_grad_ravel_then_write, no_grad_contiguous_then_write], ids=lambda f: f.__name__)
def test_copies_run_as_eager(fn):
    assert_matches_eager(fn, _transposed)


def test_contiguous_itself_under_no_grad_runs_as_eager():
    assert_matches_eager(no_grad_contiguous_then_write, _contiguous)
