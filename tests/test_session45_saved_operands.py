"""Session 45 (helper-73): three missed rejections with gradients (eager raises "modified by an inplace operation" at
backward; fusion_alias returned a gradient), found by the fuzzer's new forms with the strict backward rule
(fuzz/disjoint_views.py; calls --grad seed 35062):

* eager's out-of-place foreach functions save every tensor of every list in one node (refusals/foreach_saves.py,
  Note [an out-of-place foreach function saves every operand]; #3, #9, #51, #57, #60, #74);
* a getitem with a list key is a copy whose result carries the gradient: ``tanh(t2[[0, 1]])`` kept ``t2 = a * b``'s
  save dead (saved_versions.py; #45);
* a view read after a write into another view of its base is read through the base's new history, the other
  view's writes and their saves included (version_counters.py, Note [a view read after a write into another view];
  #0, #42, the call on disjoint views of one base).

Each program is run in eager on fresh inputs (its backward must raise, or run where the test says so) and through
fusion_alias on every reference schedule: a refusal or eager's error, never a gradient where eager raises. Where
eager runs, the outputs and leaf gradients must be eager's. The 14 tests of ``RAISES`` but the unary foreach ones
fail on 11ae4da (checked in a worktree of that commit); the 2 x 2 of the unary foreach functions (``_foreach_exp``,
``_foreach_sin``: one node keeps every position's save; the train --grad run's follow-up) fail on 5aa367a; the 7 of
``RUNS`` pass on both and guard the change.
"""

import pytest
import torch

import fusion_alias
from fusion_alias.backends.reference import SCHEDULES


def foreach_add_alpha_then_write_other(a, b, c, d):
    t0, t1 = torch._foreach_add([a, b], [c, d], alpha=0.5)
    d.add_(1)
    return t0


def foreach_mul_number_then_write_self(a, b, c, d):
    t0, t1 = torch._foreach_mul([a, b], 0.5)
    b.mul_(2)  # (position 1's tensor; the backward of position 0's result raises in eager: one node)
    return t0 * 1


def foreach_addcmul_then_write_self(a, b, c, d):
    (t0,) = torch._foreach_addcmul([a], [b], [c], value=0.3)
    a.add_(1)  # (the single addcmul saves only its tensor operands)
    return t0


def foreach_sub_then_foreach_write(a, b, c, d):  # (fuzz 35062 #9, reduced)
    t0, t1 = torch._foreach_sub([a, b], [c, a], alpha=0.9)
    torch._foreach_sub_([a, b], [t0, t1])
    return t1


def foreach_exp_then_write_the_other_result(a, b, c, d):
    t0, t1 = torch._foreach_exp([a, b])
    t1.add_(1)  # (exp saves its result; the one node saves both positions' results)
    return t0


def foreach_sin_then_write_the_other_input(a, b, c, d):
    t0, t1 = torch._foreach_sin([a, b])
    b.add_(1)
    return t0


def foreach_neg_then_write(a, b, c, d):  # (neg saves nothing)
    t0, t1 = torch._foreach_neg([a, b])
    t1.add_(1)
    b.add_(1)
    return t0, t1


def foreach_exp_then_write_the_input(a, b, c, d):  # (exp saves its result, not its input)
    t0, t1 = torch._foreach_exp([a, b])
    b.add_(1)
    return t0, t1


def copy_by_list_key_read_later(a, b, c, d):  # (fuzz 35062 #45, reduced)
    t2 = a * b
    b.sub_(1.0)
    return torch.tanh(t2[[0, 1, 2, 3]])


def copy_by_list_key_times_one(a, b, c, d):
    t2 = a * b
    b.sub_(1.0)
    return t2[[0, 1]] * 1, c


def foreach_lerp_number_then_write(a, b, c, d):  # (lerp with a number saves nothing)
    t0, t1 = torch._foreach_lerp([a, b], [c, d], 0.5)
    d.add_(1)
    return t0, t1


def write_then_foreach_add(a, b, c, d):
    d.add_(1)
    t0, t1 = torch._foreach_add([a, b], [c, d], alpha=0.5)
    return t0, t1


def foreach_add_read_before_write(a, b, c, d):
    t0, t1 = torch._foreach_add([a, b], [c, d], alpha=0.5)
    r = t0 * 2
    return r, t1.detach()


def copy_by_list_key_before_save(a, b, c, d):
    t2 = a[[0, 1]] * b[0:2]
    c.sub_(1.0)
    return t2.tanh()


def independent(fn):
    def make():
        torch.manual_seed(0)
        leaves = [torch.randn(4, 4, requires_grad=True) for _ in range(4)]
        return leaves, [leaf * 1 for leaf in leaves]
    return make


def read_after_other_view_written(a, b, c, d):  # (fuzz 35062 #0, reduced: a and b disjoint views of one base)
    b.mul_(a)  # saves a
    b.add_(1)  # the base's version moves
    return a * 1  # read through the base's new history: b.mul_'s backward runs


def read_before_other_view_written(a, b, c, d):
    r = a * 1
    b.mul_(a)
    b.add_(1)
    return r


def disjoint_views():
    torch.manual_seed(0)
    leaves = [torch.randn(40, requires_grad=True)] + [torch.randn(4, 4, requires_grad=True) for _ in range(2)]
    x = leaves[0] * 1
    return leaves, [x[0:16].view(4, 4), x[20:36].view(4, 4), leaves[1] * 1, leaves[2] * 1]


RAISES = [(f, independent(f)) for f in (foreach_add_alpha_then_write_other, foreach_mul_number_then_write_self,
                                        foreach_addcmul_then_write_self, foreach_sub_then_foreach_write,
                                        copy_by_list_key_read_later, copy_by_list_key_times_one,
                                        foreach_exp_then_write_the_other_result, foreach_sin_then_write_the_other_input)]
RAISES += [(read_after_other_view_written, disjoint_views)]
RUNS = [(f, independent(f)) for f in (foreach_lerp_number_then_write, write_then_foreach_add,
                                      foreach_add_read_before_write, copy_by_list_key_before_save,
                                      foreach_neg_then_write, foreach_exp_then_write_the_input)]
RUNS += [(read_before_other_view_written, disjoint_views)]


def _run(fn, make):
    leaves, args = make()
    out = fn(*args)
    out = out if isinstance(out, tuple) else (out,)
    weights = torch.Generator().manual_seed(1)
    sum((o * torch.rand(o.shape, generator=weights)).sum() for o in out if o.requires_grad).backward()
    return [o.detach() for o in out], [leaf.grad for leaf in leaves]


@pytest.mark.parametrize("schedule", SCHEDULES[:2])
@pytest.mark.parametrize("fn, make", RAISES, ids=lambda x: getattr(x, "__name__", ""))
def test_a_gradient_eager_refuses_is_refused(fn, make, schedule):
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        _run(fn, make)
    with pytest.raises(Exception, match="saves .* for the backward|modified by an inplace operation"):
        _run(fusion_alias.jit(fn, backend="reference", schedule=schedule), make)


@pytest.mark.parametrize("fn, make", RUNS, ids=lambda x: getattr(x, "__name__", ""))
def test_what_eager_runs_runs(fn, make):
    want_out, want_grads = _run(fn, make)
    for schedule in SCHEDULES:
        got_out, got_grads = _run(fusion_alias.jit(fn, backend="reference", schedule=schedule), make)
        for g, w in zip(got_out, want_out):
            torch.testing.assert_close(g, w)
        for g, w in zip(got_grads, want_grads):  # (None where no gradient reaches: zeros, docs/limits.md)
            torch.testing.assert_close(g if w is not None else None, w)
