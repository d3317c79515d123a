"""Session 31 fuzzing (``--special-values`` streams, ``order --grad``): a view of an argument made by a tensor
property (``a.mT``, ``a.T``: ``prims.transpose`` in the trace, no torch view symbol), ``detach()``ed and viewed
again, returned in a call that computes gradients (fuzz seed 27005 #22).

Eager's result requires no grad and passes no gradient back; fusion_alias's output, remade as a view of the
argument after the call, required grad and passed the argument a gradient, silently. It is now refused as the
same program spelled with ``a.t()`` was (refusals/returned_views.py, Note [a view made under no_grad, returned])."""

import pytest
import torch

import fusion_alias
from fusion_alias.errors import AliasInputError

PROGRAMS = {
    "mT_detach_narrow": lambda a: (a.mT.detach().narrow(1, 0, 2),),
    "mT_detach_index": lambda a: (a.mT.detach()[0],),
    "T_detach_index": lambda a: (a.T.detach()[0], a * 2),
}


@pytest.mark.parametrize("schedule", ("reads-first", "writes-first"))
@pytest.mark.parametrize("name", list(PROGRAMS))
def test_detached_view_of_a_property_view(name, schedule):
    fn = PROGRAMS[name]
    leaf = torch.randn(4, 4, requires_grad=True)
    eager = fn(leaf * 1)
    assert not eager[0].requires_grad
    jitted = fusion_alias.jit(fn, backend="reference", schedule=schedule)
    leaf2 = leaf.detach().clone().requires_grad_()
    try:
        got = jitted(leaf2 * 1)
    except AliasInputError as e:
        assert "detach" in str(e)
        return
    # (were it to run, it must be eager's: no gradient through the detached output)
    assert not got[0].requires_grad
    torch.testing.assert_close(got[0], eager[0])


def test_detached_view_of_a_property_view_without_gradients_runs():
    fn = PROGRAMS["mT_detach_narrow"]
    a = torch.randn(4, 4)
    torch.testing.assert_close(fusion_alias.jit(fn)(a.clone())[0], fn(a.clone())[0])
