"""Session 44: in a call that computes gradients, inputs that share a storage without sharing a byte (``x[0:2]``,
``x[2:4]``) share eager's version counter, so the compile refuses what eager's backward rejects
(refusals/version_counters.py). The guard key told such views from two tensors only by overlap, so a program compiled
for independent inputs ran for the views later and returned a gradient where eager raises. The key now holds which
inputs share a storage when any tensor requires grad (guard.py, Note [inputs that share a storage, in a call with
gradients]). Checked against eager on fresh inputs, every reference schedule, calls alternating the two layouts.
"""

import pytest
import torch

import fusion_alias
from fusion_alias.backends.reference import SCHEDULES
from fusion_alias.guard import guard_key


def saves_then_writes_the_other(a, b):
    a.sigmoid_()  # (saves its result)
    b.mul_(2)  # (bumps the counter a's storage shares, when it does)
    return a.sum()


def writes_both(a, b):  # no save is written after: eager runs for either layout
    a.mul_(2)
    b.add_(a.sum())
    return (a * b).sum()


def _inputs(layout: str, seed: int):
    torch.manual_seed(seed)
    leaf = torch.randn(4, requires_grad=True)
    x = leaf * 1
    if layout == "views":
        return leaf, (x[0:2], x[2:4])
    return leaf, (x[0:2].clone(), x[2:4].clone())


def _eager(fn, layout, seed):
    leaf, args = _inputs(layout, seed)
    try:
        fn(*args).backward()
    except RuntimeError as e:
        return e
    return leaf.grad


@pytest.mark.parametrize("fn", [saves_then_writes_the_other, writes_both])
@pytest.mark.parametrize("schedule", SCHEDULES)
def test_layouts_alternate_in_one_jitted_function(fn, schedule):
    jitted = fusion_alias.jit(fn, backend="reference", schedule=schedule)
    for seed, layout in enumerate(["independent", "views", "independent", "views"]):
        want = _eager(fn, layout, seed)
        leaf, args = _inputs(layout, seed)
        if isinstance(want, Exception):
            assert "modified by an inplace operation" in str(want)
            with pytest.raises(Exception, match="saves|modified by an inplace operation"):
                jitted(*args).backward()
        else:
            jitted(*args).backward()
            torch.testing.assert_close(leaf.grad, want)


def test_the_key_splits_only_with_gradients():
    x = torch.randn(4)
    apart = [x[0:2].clone(), x[2:4].clone()]
    views = [x[0:2], x[2:4]]
    assert guard_key(views)[0] == guard_key(apart)[0]  # (no gradient: one program, nothing read per storage)
    leaf = torch.randn(4, requires_grad=True)
    y = leaf * 1
    assert guard_key([y[0:2], y[2:4]])[0] != guard_key([y[0:2].clone(), y[2:4].clone()])[0]
    assert guard_key([y[0:2], y[2:4]])[0] == guard_key([y[0:2], y[2:4]])[0]
    z = (leaf * 2)[1:]  # (a storage offset: the storage starts before the data)
    assert guard_key([z, (leaf * 2)])[0] == guard_key([y[1:], y[0:1].clone()])[0]
