"""Session 44 (helper-72): ``x.detach()`` sends no gradient back, not a zero one (detach_gradient.py, Note [a detached
output sends no zero gradient back]).

Found by fuzz ``--special-values --grad`` seed 20970 #21 (calls): ``t0 = b.amax(1, keepdim=True)`` (a row of ``b``
holding NaN), ``t0.relu_()``, ``t0.zero_()``, returning ``t0.detach().expand(...)``: eager's leaf gradient None, here
NaN in the NaN row. Reduced: no write is needed; ``return c * 2, b.amax(1, keepdim=True).detach()`` alone gave NaN
(Thunder's ``detach_vjp`` handed amax's backward a zero cotangent, and ``0 * (b == amax) / count`` is 0 / 0 in a row
whose count is 0; plain ``thunder.jit`` too). A metric returned detached beside the loss (``y.norm(dim=1).detach()``
of a zero row) was the same. ``a.copy_(a.detach())`` keeps eager's zero gradient for ``a``'s old value (NaN behind an
infinite partial, as eager's).
Left open by
the change and closed in overwrite_gradients.py: a copy from a detached source (``y.copy_(w.detach())``) must still
give ``y``'s old value eager's zero gradient.
"""

import pytest
import torch

from tests.grad_helpers import assert_runs_like_eager

NAN, INF = float("nan"), float("inf")


def amax_returned_detached(b, c):
    t0 = b.amax(1, keepdim=True)
    return c * 2, t0.detach()


def amax_written_then_returned_detached(b, c):  # (the fuzz program's shape)
    t0 = b.amax(1, keepdim=True) * 2.0
    t1 = t0.relu_()
    t1.zero_()
    return c.neg_().unsqueeze(1), t0.detach().expand(2, 4, 1)


def norm_metric_returned_detached(b, c):
    y = b * c
    return y.sum(), y.norm(dim=1).detach()


def detached_read_and_a_path_of_its_own(b, c):
    t = b.amax(1, keepdim=True)
    return c * t.detach(), b * 2


def copy_from_itself_detached(b, c):
    a = b.exp() * 1  # (exp saves its result, which the copy leaves alone)
    a.copy_(a.detach())
    return a * c


def copy_of_another_detached(b, c):  # (eager: b's old value gets zeros, NaN behind exp's inf; c gets None)
    y = b.exp() * 1
    y.copy_(c.detach())
    return y


def _inputs(rows):
    def make():
        leaves = [torch.tensor(rows).requires_grad_(), torch.tensor([1.0, 2.0, 3.0, 4.0]).requires_grad_()]
        return leaves, [w * 1 for w in leaves]
    return make


WITH_NAN = _inputs([[1.0, NAN, 2, 3], [INF, 1, 2, 3], [-INF, 0, 1, 2], [1, 2, 3, 4]])
ZERO_ROW = _inputs([[0.0, 0, 0, 0], [1, -1, 2, 3], [0.5, 0, 1, 2], [1, 2, 3, 4]])
LARGE = _inputs([[1e5, 1, 2, 3], [0.0, 1, 2, 3], [-1, 0, 1, 2], [1, 2, 3, 4]])


def _loss_and_grads(f, make):
    leaves, args = make()
    outs = f(*args)
    outs = outs if isinstance(outs, tuple) else (outs,)
    diff = [o for o in outs if o.requires_grad]
    sum((o * (torch.arange(o.numel(), dtype=o.dtype).reshape(o.shape) + 1)).sum() for o in diff).backward()
    return [o.detach() for o in outs], [w.grad for w in leaves]


@pytest.mark.parametrize("fn, make", [
    (amax_returned_detached, WITH_NAN),
    (amax_written_then_returned_detached, WITH_NAN),
    (norm_metric_returned_detached, ZERO_ROW),
    (detached_read_and_a_path_of_its_own, WITH_NAN),
    (copy_from_itself_detached, LARGE),
    (copy_of_another_detached, LARGE),
], ids=["amax", "amax_written", "norm_metric", "read_and_own_path", "copy_from_itself", "copy_of_another"])
def test_gradients_as_eager(fn, make):
    assert_runs_like_eager(fn, _loss_and_grads, make)


def test_a_copy_of_a_detached_source_returns_a_tensor_with_a_history():
    # (with detach a constant and no join, the result was a leaf that requires grad: a later add_ raised)
    import fusion_alias

    for f in (copy_of_another_detached, fusion_alias.jit(copy_of_another_detached, backend="reference")):
        leaves, args = LARGE()
        out = f(*args)
        assert out.requires_grad and out.grad_fn is not None
        out.add_(1)
