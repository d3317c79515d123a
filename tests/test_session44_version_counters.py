"""Session 44 (helper-72): eager's version counter is one per storage, shared by disjoint views of one base
(saved_versions.py, Note [one version counter per storage]).

Found by hand probes beside the fuzz runs: with the inputs ``x[0:2]`` and ``x[2:4]`` of one ``x = leaf * 1``,
``a.sigmoid_(); b.mul_(2); return a.sum()`` raises at eager's backward (``SigmoidBackward0`` saved ``a``, and the write
into ``b`` moved the counter both share), where fusion_alias returned a gradient: the saves and writes were counted
per memory, and inputs that do not overlap were two memories. ``a.pow_(b)`` of two rows of one tensor (pow_ saves its
exponent ``b``, then writes ``a``) and a view of ``a`` made under ``no_grad``, read after a write into ``b``, were the
same. The same programs given independent tensors run, as in eager.

The guard keys which inputs share a storage in calls with gradients (guard.py; tests/test_session44_shared_storage_key.py
checks the calls that alternate the two layouts).
"""

import pytest
import torch

import fusion_alias
from tests.grad_helpers import assert_matches_eager


def sigmoid_then_other_view(a, b):
    a.sigmoid_()
    b.mul_(2)
    return a.sum()


def pow_by_the_other_row(a, b):
    a.abs_().add_(0.1).pow_(b)
    return a * 1


def mul_saves_then_other_view(a, b, w):
    y = a * w  # saves a (w requires grad)
    b.add_(1)
    return y


def no_grad_view_read_after_other_write(a, b):
    with torch.no_grad():
        v = a[0]
    b.mul_(2)
    return v * 1, b * 1


def exp_then_other_view(a, b):  # exp saves its result, new memory: eager runs
    y = a.exp()
    b.mul_(2)
    return y


def _rows(i, j, k, m):
    def make():
        leaf = (torch.arange(16.0) / 8 - 1).requires_grad_()
        x = (leaf * 1).view(4, 4)
        return [leaf], [x[i:j], x[k:m]]
    return make


def _apart(i, j, k, m):
    def make():
        leaf = (torch.arange(16.0) / 8 - 1).requires_grad_()
        x = (leaf * 1).view(4, 4)
        return [leaf], [x[i:j] * 1, x[k:m] * 1]
    return make


def _with_weight(make):
    def made():
        leaves, args = make()
        w = torch.linspace(-1, 1, 8).view(2, 4).requires_grad_()
        return leaves + [w], args + [w]
    return made


def _backward(outs):
    outs = outs if isinstance(outs, tuple) else (outs,)
    sum(o.sum() for o in outs).backward()


CASES = [  # (function, disjoint views of one base, the same values apart, the refusal's words)
    (sigmoid_then_other_view, _rows(0, 2, 2, 4), _apart(0, 2, 2, 4), "sigmoid_ saves"),
    (pow_by_the_other_row, _rows(0, 1, 1, 2), _apart(0, 1, 1, 2), "pow_ saves"),
    (mul_saves_then_other_view, _with_weight(_rows(0, 2, 2, 4)), _with_weight(_apart(0, 2, 2, 4)), "mul saves"),
    (no_grad_view_read_after_other_write, _rows(0, 2, 2, 4), _apart(0, 2, 2, 4), "no_grad"),
]
IDS = [c[0].__name__ for c in CASES]


@pytest.mark.parametrize("fn, views, apart, match", CASES, ids=IDS)
def test_disjoint_views_of_one_base_refused_as_eager_raises(fn, views, apart, match):
    with pytest.raises(RuntimeError):
        _backward(fn(*views()[1]))
    with pytest.raises(fusion_alias.AliasInputError, match=match):
        _backward(fusion_alias.jit(fn, backend="reference")(*views()[1]))


@pytest.mark.parametrize("fn, views, apart, match", CASES, ids=IDS)
def test_independent_tensors_run_as_eager(fn, views, apart, match):
    assert_matches_eager(fn, apart)


def test_result_save_of_disjoint_views_runs_as_eager():
    assert_matches_eager(exp_then_other_view, _rows(0, 2, 2, 4))
