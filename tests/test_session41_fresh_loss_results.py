"""Session 41 (helper-68): ``F.l1_loss``, ``F.pairwise_distance`` and ``x.mode(d)`` allocate their result; with
gradients Thunder hands them over whole and a write after or through one was refused ("cannot express as views of
one tensor") where eager runs it (fresh_results.py, Note [torch functions whose result is new memory], now trusting
``torch.nn.functional`` too). ``pairwise_distance`` saves its result for the backward: a write through it is refused
as eager's backward raises (refusals/saved_versions.py's table). Checked against eager on fresh inputs (values,
written inputs, gradients; reference schedules, first and cached call), with and without gradients.
"""

import pytest
import torch
import torch.nn.functional as F

import fusion_alias
from fusion_alias import AliasInputError
from tests.grad_helpers import assert_matches_eager

SCHEDULES = ["reads-first", "writes-first"]

OPS = {
    "l1_loss": lambda x: F.l1_loss(x, x * 0.5), "l1_loss_none": lambda x: F.l1_loss(x, x.detach() * 2, reduction="none"),
    "pairwise_distance": lambda x: F.pairwise_distance(x, x * 0.5), "mode": lambda x: x.mode(-1).values,
}


def _after(op):
    def prog(x):
        y = op(x)
        x.add_(1.0)
        return y * 2, x * 1

    return prog


def _through(op):
    def prog(x):
        y = op(x)
        y.add_(1.0)
        return x * 1, y * 3

    return prog


CASES = [(n, k) for n in OPS for k in ("after", "through")]
BUILD = {"after": _after, "through": _through}
REFUSED = {("pairwise_distance", "through")}


def _make():
    w = (torch.arange(12.0).reshape(3, 4) / 5 - 1).requires_grad_()
    return [w], (w * 1,)


@pytest.mark.parametrize("name,kind", CASES, ids=[f"{n}-{k}" for n, k in CASES])
def test_with_gradients_eagers_verdict(name, kind):
    prog = BUILD[kind](OPS[name])
    if (name, kind) not in REFUSED:
        assert_matches_eager(prog, _make)
        return
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        sum(o.sum() for o in prog(*_make()[1])).backward()
    for schedule in SCHEDULES:
        with pytest.raises(AliasInputError, match="pairwise_distance saves"):
            fusion_alias.jit(prog, backend="reference", schedule=schedule)(*_make()[1])


@pytest.mark.parametrize("name,kind", CASES, ids=[f"{n}-{k}" for n, k in CASES])
@pytest.mark.parametrize("schedule", SCHEDULES)
def test_without_gradients_matches_eager(name, kind, schedule):
    prog = BUILD[kind](OPS[name])
    x = torch.arange(12.0).reshape(3, 4) / 5 - 1
    want_x, got_x = x.clone(), x.clone()
    want = prog(want_x)
    got = fusion_alias.jit(prog, backend="reference", schedule=schedule)(got_x)
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w)
    torch.testing.assert_close(got_x, want_x)
