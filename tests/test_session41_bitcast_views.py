"""Session 41 (helper-68's fuzz finding, order --grad 27014 #10 and #38): in a call that computes gradients,
``(t0.t() * 2).view(torch.float16)`` of a result whose eager layout has a last stride other than 1 returned a value
where eager raises "self.stride(-1) must be 1 to view Float as Half": Thunder's autodiff flattens ``view(dtype)`` to
``prims.bitcast`` in the joint trace the pass sees, which the layout check did not take as a dtype view
(layout_checks._is_storage_op). Without gradients the check already raised. Compared with eager on fresh inputs,
under both reference schedules: eager's error where eager raises, eager's values where it runs.
"""

import pytest
import torch

import fusion_alias
from fusion_alias.layout_checks import ViewLayoutError

SCHEDULES = ["reads-first", "writes-first"]


def transposed_result(a):
    t0 = a.t().clone()
    return a.sum(0), (t0.t() * 2).view(torch.float16)


def same_element_size(a):
    return a.sum(0), (a.t() * 2).view(torch.int32)


def contiguous_result(a):
    return a.sum(0), (a * 2).view(torch.float16)


def _inputs(transposed: bool):
    torch.manual_seed(0)
    leaf = torch.randn(4, 4, requires_grad=True)
    x = leaf * 1
    return leaf, (x.t() if transposed else x)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_a_dtype_view_eager_rejects_is_rejected_with_gradients(schedule):
    _, a = _inputs(True)
    with pytest.raises(RuntimeError, match="stride"):
        transposed_result(a)
    jitted = fusion_alias.jit(transposed_result, backend="reference", schedule=schedule)
    for _ in range(2):  # (the second call too: it ran the cached program)
        _, a = _inputs(True)
        with pytest.raises(ViewLayoutError, match=r"stride\(-1\) must be 1"):
            jitted(a)


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("fn, transposed", [(same_element_size, True), (contiguous_result, False)],
                         ids=["same-element-size", "contiguous"])
def test_a_dtype_view_eager_accepts_runs_with_gradients(fn, transposed, schedule):
    jitted = fusion_alias.jit(fn, backend="reference", schedule=schedule)
    for _ in range(2):
        leaf_e, a_e = _inputs(transposed)
        leaf_j, a_j = _inputs(transposed)
        want, got = fn(a_e), jitted(a_j)
        for g, w in zip(got, want):
            assert g.dtype == w.dtype and g.shape == w.shape
            assert torch.equal(g.detach(), w.detach())
        want[0].sum().backward()
        got[0].sum().backward()
        torch.testing.assert_close(leaf_j.grad, leaf_e.grad)
