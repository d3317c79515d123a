"""Functionalization before Thunder's autodiff (issue 13): the cases each Note of
``autograd_functionalize.py`` and ``functional_rewrite.py`` handles, against eager.

Every check compares outputs, mutated inputs and leaf gradients with eager on every
reference schedule, first and cached call (``tests/grad_helpers.assert_matches_eager``).
"""

from __future__ import annotations

import pytest
import torch

import fusion_alias
from fusion_alias.backends.reference import SCHEDULES
from tests.grad_helpers import assert_matches_eager


def _leaves(*shapes, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return [torch.randn(*s, generator=gen).requires_grad_() for s in shapes]


def _derived(*shapes):
    def make():
        ws = _leaves(*shapes)
        return ws, [w * 1 for w in ws]

    return make


def test_issue_13_zero_gradient_matches_eager():
    # plain Thunder (and fusion_alias before) gave 0 per element; eager gives -1 for o1 + 3 o2
    def fn(a):
        t0 = a * 0.5
        t1 = t0.neg_()
        t0.mul_(0.5)
        return t1, t0

    w = torch.ones(3, requires_grad=True)
    o1, o2 = fusion_alias.jit(fn, backend="reference")(w * 1)
    (o1.sum() + 3 * o2.sum()).backward()
    torch.testing.assert_close(w.grad, torch.full((3,), -1.0))
    assert_matches_eager(fn, _derived((3,)))


def test_tied_parameters_with_inplace_ops_match_eager():
    def step(p, q, g):
        p.add_(g, alpha=-0.1)
        q.mul_(0.9)  # q is p: the second write sees the first
        return p * g

    def make():
        ws = _leaves((4,), (4,))
        p = ws[0] * 1
        return ws, [p, p, ws[1] * 1]

    assert_matches_eager(step, make)


def test_zero_dim_operand_beside_a_tensor_is_broadcast_explicitly():
    # Note [0-d operands of elementwise ops, broadcast explicitly] (fuzz --grad seed 1 #10)
    def fn(h0, h1):
        t0 = h1[3]
        t1 = torch.sigmoid(h0)
        t0.mul_(t1)
        return h1, t1.reshape(1)

    def make():
        w1, w3 = _leaves((4, 4), (4, 4))
        return [w1, w3], [(w1 * 1)[1, 2], w3 * 1]

    assert_matches_eager(fn, make)


def test_batch_norm_running_stats_get_no_history():
    # Note [state updates inside an op run without grad]: two training steps, one backward each
    torch.manual_seed(0)
    eager_m = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.BatchNorm1d(4), torch.nn.ReLU(inplace=True))
    jit_m = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.BatchNorm1d(4), torch.nn.ReLU(inplace=True))
    jit_m.load_state_dict(eager_m.state_dict())
    jitted = fusion_alias.jit(jit_m, backend="reference")
    for step in range(2):
        x = torch.randn(6, 4, generator=torch.Generator().manual_seed(step))
        want, got = eager_m(x), jitted(x)
        torch.testing.assert_close(got, want)
        want.square().sum().backward()
        got.square().sum().backward()  # a buffer with a history would backward into the last step here
        for (name, a), (_, b) in zip(jit_m.state_dict().items(), eager_m.state_dict().items()):
            torch.testing.assert_close(a, b, msg=name)
            assert not a.requires_grad or name.endswith(("weight", "bias")), name
    for a, b in zip(jit_m.parameters(), eager_m.parameters()):
        torch.testing.assert_close(a.grad, b.grad)


def test_write_through_a_part_of_an_expanded_input_matches_eager():
    # Note [a written input that expands one memory]: one memory row, read by every row of h
    def fn(a, h):
        h[3].mul_(a.sum())
        return h * 1, a * 2

    def make():
        w, v = _leaves((4,), (4, 4))
        return [w, v], [w * 1, (v * 1)[0].expand(4, 4)]

    assert_matches_eager(fn, make)


def test_leaf_written_under_grad_mode_gets_eagers_error():
    def fn(p):
        p.add_(1)
        return p * 2

    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        fn(torch.ones(3, requires_grad=True))
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        fusion_alias.jit(fn)(torch.ones(3, requires_grad=True))


def test_functionalized_forward_still_fuses_into_one_region():
    def fn(a, b):
        a.mul_(b)
        a.add_(1)
        return a.sin()

    jitted = fusion_alias.jit(fn, backend="reference")
    assert_matches_eager(fn, _derived((8,), (8,)))
    ws = _leaves((8,), (8,))
    jitted(*[w * 1 for w in ws])
    assert fusion_alias.regions(jitted)  # the forward's regions
    assert len(fusion_alias.regions(jitted)) == 1


def test_no_grad_write_into_a_module_parameter_matches_eager():
    # a parameter (a leaf that requires grad) updated under the program's no_grad, then read
    class Step(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.p = torch.nn.Parameter(torch.linspace(-1, 1, 4))

        def forward(self, g):
            with torch.no_grad():
                self.p.sub_(g * 0.1)
            return self.p * g

    def run(jit):
        module = Step()
        fn = fusion_alias.jit(module, backend="reference") if jit else module
        results = []
        for _ in range(2):  # first and cached call
            g = torch.linspace(0, 1, 4).requires_grad_()
            out = fn(g * 1)
            out.sum().backward()
            results += [out.detach(), module.p.detach().clone(), module.p.grad.clone(), g.grad]
        return results

    for got, want in zip(run(True), run(False)):
        torch.testing.assert_close(got, want)


# Regressions from this session's `fuzz --grad` campaigns (seed and program in each name's comment)


def _clone_before_view(a, b):  # 14006 #7: the program's own clone() before a view was taken for an inserted one
    t1 = b.clone()
    t2 = t1.view(-1)
    t2.add_(t2, alpha=2.0)
    return t1, a * b


def _zeroed_input_still_requires_grad(a, b):  # seed 2 #467: eager's b.zero_() result requires grad
    t1 = b.transpose(1, 2).unsqueeze(-3)
    b.zero_()
    return b, t1, a


def _trunc_division(b):  # seed 1 #293, 14011 #48: no grad rule for prims.trunc; eager's gradient is 0
    b.abs_()
    return torch.div(b, 3, rounding_mode="trunc"), b


def _expanded_member(a, o):  # seed 1 #160: an expand()ed input joined with the input it views
    t0 = a.abs_()
    t0[2:] = o
    t0[0] = -1.5
    return t0, o.expand(2, 4)


@pytest.mark.parametrize(
    "fn, make",
    [
        (_clone_before_view, lambda: (lambda ws: (ws, [ws[0] * 1] * 2))(_leaves((4, 4)))),
        (_trunc_division, _derived((6,))),
        (_expanded_member, lambda: (lambda ws: (ws, [ws[0] * 1, (ws[0] * 1)[1, 2].expand(4)]))(_leaves((4, 4)))),
    ],
    ids=["clone_before_view", "trunc_division", "expanded_member"],
)
def test_fuzz_grad_findings_match_eager(fn, make):
    assert_matches_eager(fn, make)


def test_write_through_narrow_into_an_input_matches_eager():
    # seed 2 #1: torch.narrow's result written in place; the write never reached `a`. Refused from then until
    # session 21, where narrow became the slice it is (view_rewrites.py, Note [narrow is a slice])
    def fn(a, b):
        t0 = a.narrow(1, 3, 1)
        t0.sub_(t0)
        return b * 2 + a[1]  # (a in the loss: a written input that is not gets a zero gradient, eager None)

    assert_matches_eager(fn, _derived((4, 4), (4,)))


def test_write_through_a_diagonal_of_an_input_matches_eager():
    def fn(a, b):
        a.diagonal().sub_(1)  # diagonal is a gather in Thunder: replayed by its own symbol (gather_views.py)
        return b * 2, a * b

    assert_matches_eager(fn, _derived((4, 4), (4,)))


def test_dead_write_keeps_eagers_error():
    # seed 1 #48: the neg_() of a bool temporary nobody reads still raises eager's error
    def fn(b, c):
        t4 = (b // -2).bool()
        t4.neg_()
        return c * 2

    with pytest.raises(RuntimeError, match="Negation"):
        fusion_alias.jit(fn)(torch.randint(-8, 9, (4,), dtype=torch.int32), _derived((4,))()[1][0])


def test_outputs_require_grad_as_in_eager():
    # seed 2 #467: b.zero_() of a b that requires grad still requires grad in eager (a zero gradient);
    # Note [outputs no gradient reaches]. Gradients compared with None as zeros, as the fuzzer does.
    def run(fn):
        ws = _leaves((4, 1, 6), (2, 3, 4))
        outs = fn(*[w * 1 for w in ws])
        flags = [o.requires_grad for o in outs]
        sum((o * (i + 1)).sum() for i, o in enumerate(outs) if o.requires_grad).backward()
        grads = [torch.zeros_like(w) if w.grad is None else w.grad for w in ws]
        return [o.detach() for o in outs], flags, grads

    want = run(_zeroed_input_still_requires_grad)
    got = run(fusion_alias.jit(_zeroed_input_still_requires_grad, backend="reference"))
    assert got[1] == want[1]
    for g, w in zip(got[0] + got[2], want[0] + want[2]):
        torch.testing.assert_close(g, w)


# Note [reads through detach, after writes] (functional_rewrite.py): detach() names its memory, with
# no gradient; a read after a write sees the write, a write through it is one autograd does not see.
def _views_of_one_base():
    leaf = torch.linspace(-1, 1, 24).reshape(2, 3, 4).requires_grad_()
    x0 = leaf * 1
    return [leaf], [x0, x0.transpose(0, 1), x0[0:2], x0.view(-1)]


def _detached_read_after_a_write_through_another_input(a, b, c, d):  # fuzz seed 20491 #2
    t0 = c.detach().unsqueeze(-3)
    b[1::2] = -1.5
    return c * 1, torch.where(t0 > 0, t0, t0) * 2, b * b


def _write_through_detach_then_reads(a, b, c, d):  # fuzz seed 20491 #12
    t0 = a * 0.5
    a.detach().zero_()
    return b * 1, t0, torch.tanh(a)


def _detached_of_a_program_value(a, b, c, d):
    h = a * 2
    dh = h.detach()
    h.mul_(3)
    dh[0].mul_(0.5)
    return dh * 1, h * 1


def _add_its_own_detach(a, b, c, d):  # fuzz seed 20492 #44: the full overlap eager accepts
    h = a * 1
    h.add_(h.detach())
    return h.exp(), b * 1


def _row_minus_a_detached_row(a, b, c, d):
    h = a * 1
    h[0].sub_(h.detach()[1])
    return h * 2, c * 1


@pytest.mark.parametrize("fn", [_detached_read_after_a_write_through_another_input, _write_through_detach_then_reads,
                                _detached_of_a_program_value, _add_its_own_detach, _row_minus_a_detached_row],
                         ids=lambda f: f.__name__)
def test_reads_and_writes_through_detach_match_eager(fn):
    assert_matches_eager(fn, _views_of_one_base)


def test_a_value_that_requires_grad_written_through_detach_is_refused():
    def fn(a, b, c, d):
        h = a * 2
        dh = h.detach()
        dh.copy_(a * 5)  # eager's dh then carries a's gradient, h does not
        return h * 1, dh * 1

    with pytest.raises(fusion_alias.AliasInputError, match="made by detach.*not supported"):
        fusion_alias.jit(fn, backend="reference")(*_views_of_one_base()[1])


def test_a_write_through_detach_of_a_leaf_that_requires_grad_matches_eager():
    def fn(x):
        x.detach()[0].mul_(2)  # eager: the leaf's data changes, its gradient path does not
        return x * 3

    def make():
        x = torch.tensor([[1.0, 2.0], [3.0, -4.0]], requires_grad=True)
        return [x], [x]

    assert_matches_eager(fn, make)


def _outputs_flags_and_grads(fn, *shapes):
    """``fn``'s outputs, their requires_grad flags, and the leaves' gradients (zeros for None) of a loss
    with random weights over the outputs that require grad, on fresh leaves of ``shapes``."""
    ws = _leaves(*shapes)
    outs = fn(*[w * 1 for w in ws])
    flags = [o.requires_grad for o in outs]
    weights = torch.Generator().manual_seed(1)
    sum((o * torch.rand(o.shape, generator=weights)).sum() for o in outs if o.requires_grad).backward()
    grads = [torch.zeros_like(w) if w.grad is None else w.grad for w in ws]
    return [o.detach() for o in outs], flags, grads


def _mask_as_float_then_written(a, b):
    t1 = (b < 0).float()  # a bool result of b, made float: eager's requires no grad
    t2 = a.expand(2, 4, 1, 6)
    t1[1::2, ::2].sub_((t1[1::2, ::2] > 0).float().sigmoid())
    return t1, t2


def test_an_integer_or_bool_result_and_what_is_made_of_it_require_no_grad():
    # Note [outputs no gradient reaches]: an op of an integer or bool result requires no grad in eager;
    # fusion_alias followed "requires grad" through (b < 0), so (b < 0).float() was returned requiring
    # grad, and a loss over the outputs that require grad weighted the others differently (fuzz seed
    # 20415 #166, basic --grad, a mask spelling of session 16)
    want = _outputs_flags_and_grads(_mask_as_float_then_written, (4, 1, 6), (4, 6))
    got = _outputs_flags_and_grads(fusion_alias.jit(_mask_as_float_then_written, backend="reference"), (4, 1, 6), (4, 6))
    assert got[1] == want[1] == [False, True]
    for g, w in zip(got[0] + got[2], want[0] + want[2]):
        torch.testing.assert_close(g, w)


def _through_an_int32_view(a, b):
    c = a[1:]
    t0 = c.reshape(-1)
    t0.neg_()
    t1 = (c.view(torch.int32) + 0).view(torch.float32)  # eager: requires no grad
    t2 = a.view(torch.int32).view(torch.float32)  # a view of a view of another dtype: no grad either
    return t1, t2, t0 * b.sum()


def test_a_view_of_another_dtype_requires_no_grad():
    # Note [outputs no gradient reaches]: no gradient flows through view(torch.int32), an integer result;
    # fusion_alias followed "requires grad" through it and returned t1, t2 requiring grad (fuzz seeds 20417
    # #26, #30, #39, layout --grad, session 16's int32 views; the fix of 20415 #166)
    want = _outputs_flags_and_grads(_through_an_int32_view, (4, 6), (2, 3))
    got = _outputs_flags_and_grads(fusion_alias.jit(_through_an_int32_view, backend="reference"), (4, 6), (2, 3))
    assert got[1] == want[1] == [False, False, True]
    for g, w in zip(got[0] + got[2], want[0] + want[2]):
        torch.testing.assert_close(g, w)


def _copy_from_itself_detached(a, b):
    t0 = a.copy_(a.detach())
    return t0 * b.sum(), b * 1


def _setitem_of_its_own_detached_rows(a, b):
    a[0:2] = a.detach()[0:2]
    return a * 2, b * 1


@pytest.mark.parametrize("fn", [_copy_from_itself_detached, _setitem_of_its_own_detached_rows])
def test_a_copy_from_itself_detached_cuts_the_gradient_as_in_eager(fn):
    # noop_copies.py, Note [a copy from itself detached]: dropped as a copy onto itself, ``a`` kept its history and
    # its leaf got the loss's gradient, where eager's gets zeros (fuzz seed 20516 #141, basic --grad)
    assert_matches_eager(fn, _derived((4, 6), (6,)))


def _returns_a_reshape_of_its_detached_saved_tensor(c, b):
    t0 = c.exp()
    t0.copy_(c)
    return t0.detach().reshape(3, 1, 4), b * 2


def test_a_reshape_of_a_detached_tensor_starts_no_backward():
    # saved_versions.py, _views_maybe: exp saves t0, then t0 is written; eager's backward never reaches exp through
    # the returned t0.detach().reshape(...), and it was refused saying eager raises (fuzz seed 20525 #91, basic --grad)
    fn = _returns_a_reshape_of_its_detached_saved_tensor
    results = []
    for f in (fn, fusion_alias.jit(fn, backend="reference")):
        ws = _leaves((3, 4), (2,))
        outs = f(*[w * 1 for w in ws])
        outs[1].sum().backward()
        results.append((outs[0], outs[1].detach(), [w.grad if w.grad is not None else torch.zeros_like(w) for w in ws]))
    torch.testing.assert_close(results[1], results[0])  # (a leaf no gradient reaches: None in eager, zeros here)


def _written_through_its_detached_result(a, h):
    t0 = h.sin()
    h.copy_(h)
    t2 = t0.detach().view(1)
    t3 = h.zero_()
    t6 = t2.neg_()  # eager returns t2 itself: no grad
    return t2, t6, a.t(), t3


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_an_inplace_result_of_a_detached_tensor_requires_no_grad(schedule):
    # Note [outputs no gradient reaches]: the copy_ result of a write into a detached tensor was not read as
    # detached, so ``t2.neg_()`` came back requiring grad where eager's (t2 itself) does not, and a loss over
    # the outputs that require grad weighted the others differently (fuzz seed 20602 #39, all --grad, hidden)
    jitted = fusion_alias.jit(_written_through_its_detached_result, backend="reference", schedule=schedule)
    sides = []
    for fn in (_written_through_its_detached_result, jitted):
        ws = _leaves((2, 4), (1,))
        inputs = [w * 1 for w in ws]
        outs = fn(*inputs)
        flags = [o.requires_grad for o in outs]
        weights = torch.Generator().manual_seed(1)
        sum((o * torch.rand(o.shape, generator=weights)).sum() for o in outs if o.requires_grad).backward()
        grads = [torch.zeros_like(w) if w.grad is None else w.grad for w in ws]
        sides.append(([o.detach() for o in outs] + [i.detach() for i in inputs] + grads, flags))
    assert sides[0][1] == sides[1][1] == [False, False, True, True]
    for g, w in zip(sides[1][0], sides[0][0]):
        torch.testing.assert_close(g, w)


def _strided_views_of_a_non_leaf(*views):
    def make():
        ws = _leaves((4, 6))
        x0 = ws[0] * 1
        return ws, [v(x0) for v in views]

    return make


@pytest.mark.parametrize(
    "fn, make",
    [
        (lambda a: a.mul_(2) * 1, _strided_views_of_a_non_leaf(lambda x: x[:, 1])),
        (lambda a: a.add_(1).exp(), _strided_views_of_a_non_leaf(lambda x: x[:, ::2])),
        (lambda a: (a.__setitem__(0, 5.0), a * 2)[1], _strided_views_of_a_non_leaf(lambda x: x[:, 2])),
        (lambda a, b: (a.mul_(2), b * 1), _strided_views_of_a_non_leaf(lambda x: x[:, 1], lambda x: x)),
        (lambda a, b: (a.mul_(2), b.add_(1), a * b[1]),
         _strided_views_of_a_non_leaf(lambda x: x[:, 1], lambda x: x[1])),
        (lambda a, b: (b.mul_(2), a * 1), _strided_views_of_a_non_leaf(lambda x: x[:, ::2], lambda x: x)),
        (lambda a, b: (a.sub_(1), b.sum()), _strided_views_of_a_non_leaf(lambda x: x[1:3, 1:4], lambda x: x[2])),
    ],
    ids=["column", "step_slice", "column_setitem", "column_beside_base", "column_and_row", "step_slice_beside_base",
         "block_and_row"],
)
def test_written_inputs_that_are_not_dense_match_eager(fn, make):
    # session 19 probe: torch's internal-overlap check answers "cannot tell" for every layout that is
    # not dense, and the rewrite read that as "its elements overlap": writing x0[:, 1] of a non-leaf x0,
    # in a call that computes gradients, was refused ("elements share memory with each other in a way
    # other than expand()"). The strides decide it now (overlap.may_overlap_itself).
    assert_matches_eager(fn, make)
