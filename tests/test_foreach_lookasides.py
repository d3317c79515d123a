"""``torch._foreach_*`` ops under fusion_alias.jit (fusion_alias/foreach_lookasides.py): each is the
per-tensor op in turn, as eager's fallback runs it. Compared with eager on fresh inputs (results and
every tensor in the lists after the call), in every reference schedule, first and cached calls."""

import re

import pytest
import thunder
import torch

import fusion_alias
from fusion_alias.backends.reference import SCHEDULES
from grad_helpers import assert_matches_eager


def _sgd_momentum(ps, gs, bufs):
    torch._foreach_mul_(bufs, 0.9)
    torch._foreach_add_(bufs, gs)
    torch._foreach_add_(ps, bufs, alpha=-0.1)
    return ps[0] * 1


def _adam(ps, gs, ms, vs):
    torch._foreach_lerp_(ms, gs, 0.1)
    torch._foreach_mul_(vs, 0.999)
    torch._foreach_addcmul_(vs, gs, gs, 0.001)
    denom = torch._foreach_sqrt(vs)
    torch._foreach_add_(denom, 1e-8)
    torch._foreach_addcdiv_(ps, ms, denom, value=-0.01)
    return torch._foreach_norm(ps)


def _ema(ema, ps, _):
    torch._foreach_lerp_(ema, ps, 0.01)
    return ema[1] + 0


def _per_tensor_scalars(ps, gs, _):
    torch._foreach_mul_(ps, [0.5, 2.0, -1.0])
    torch._foreach_addcmul_(ps, gs, gs, [0.1, 0.2, 0.3])
    return torch._foreach_maximum(ps, gs)


def _flat_buffer_views(flat, gs, _):
    # the parameters are views of one flat buffer: the writes land in it
    ps = list(flat.view(3, 4).unbind(0))
    torch._foreach_add_(ps, gs, alpha=-1.0)
    torch._foreach_clamp_min_(ps, -0.5)
    return flat.sum()


def _same_list_twice(ps, gs, _):
    torch._foreach_add_(ps, ps)  # each tensor doubled
    torch._foreach_zero_(gs)
    return ps[2] * 2


def _copy_and_unary(ps, gs, _):
    torch._foreach_copy_(ps, gs)
    torch._foreach_sigmoid_(ps)
    torch._foreach_neg_(gs)
    return torch._foreach_exp(gs)


def _make(kind):
    g = torch.Generator().manual_seed(11)
    lists = [[torch.randn(4, generator=g) for _ in range(3)] for _ in range(4)]
    if kind in (_flat_buffer_views, _maximum_of_views_of_one_buffer):
        return [torch.randn(12, generator=g), lists[1], None]
    if kind is _adam:
        lists[3] = [v.abs() for v in lists[3]]
        return lists
    return lists[:3]


def _scalar_tensor_of_a_written_tensor(ps, gs, _):
    # one 0-dim tensor, an element of a tensor written, that eager reads as a number: once, before
    # the writes (Note [a foreach op's tensor scalar]; fuzz seed 19910 was refused, "eager rejects")
    torch._foreach_add_(ps, ps[0][1])
    torch._foreach_sub_(gs, gs[2][3])
    torch._foreach_clamp_min_(gs, gs[1][0])
    torch._foreach_mul_(gs, ps[1][0])  # (the Tensor overload, an operand outside gs)
    return ps[0] * 1


def _maximum_and_minimum(ps, gs, ms):
    # Note [foreach maximum is clamp_min per tensor]: Thunder 0.2.6 has no maximum_ ("Unknown attribute
    # maximum_", amsgrad Adam with foreach=True; hostile probe r12)
    torch._foreach_maximum_(ms, gs)  # a list
    torch._foreach_minimum_(ps, 0.5)  # a number
    torch._foreach_maximum_(gs, [0.1, -0.2, 0.3])  # a number per tensor
    torch._foreach_minimum_(ms, ms)  # the same list twice
    return torch._foreach_maximum(ps, -0.25), torch._foreach_minimum(ps, ms)


def _maximum_of_views_of_one_buffer(flat, gs, _):
    # each row takes the maximum with the next row, in turn: the last reads the first as already written
    ps = list(flat.view(3, 4).unbind(0))
    torch._foreach_maximum_(ps, [ps[1], ps[2], ps[0]])
    torch._foreach_minimum_(ps, gs)
    return flat * 1


PROGRAMS = [_sgd_momentum, _adam, _ema, _per_tensor_scalars, _flat_buffer_views, _same_list_twice, _copy_and_unary,
            _scalar_tensor_of_a_written_tensor, _maximum_and_minimum, _maximum_of_views_of_one_buffer]


def _assert_same(got, want):
    if isinstance(want, (list, tuple)):
        assert type(got) is type(want) and len(got) == len(want)
        for g, w in zip(got, want):
            _assert_same(g, w)
    elif isinstance(want, torch.Tensor):
        torch.testing.assert_close(got, want)


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("fn", PROGRAMS, ids=lambda f: f.__name__)
def test_matches_eager(fn, schedule):
    jitted = fusion_alias.jit(fn, backend="reference", schedule=schedule)
    for _ in range(2):
        args_e, args_j = _make(fn), _make(fn)
        want, got = fn(*args_e), jitted(*args_j)
        _assert_same(got, want)
        _assert_same(args_j, args_e)


def test_one_region_for_a_whole_step():
    ps, gs, bufs = _make(_sgd_momentum)
    jitted = fusion_alias.jit(_sgd_momentum, backend="reference")
    jitted(ps, gs, bufs)
    assert len(fusion_alias.regions(jitted)) == 1


def test_mismatched_lists_get_an_error():
    def f(ps, gs):
        torch._foreach_add_(ps, gs)
        return ps[0]

    with pytest.raises(RuntimeError):
        f([torch.ones(2)] * 2, [torch.ones(2)])
    with pytest.raises(Exception, match="same number of tensors"):
        fusion_alias.jit(f, backend="reference")([torch.ones(2), torch.ones(2)], [torch.ones(2)])


@pytest.mark.parametrize("call", [
    lambda ps: torch._foreach_mul_(ps, torch.tensor([2.0, 3.0])),  # a scalar tensor with a dim
    lambda ps: torch._foreach_lerp_(ps, torch.tensor(1.0), 0.5),  # one tensor where a list goes
    lambda ps: torch._foreach_mul_(ps, ps[0][1]),  # the Tensor overload: each op's operand check
    lambda ps: torch._foreach_add_(ps, ps[1][0], alpha=2.0),
], ids=["scalar-with-a-dim", "tensor-for-a-list", "mul-overlap", "add-alpha-overlap"])
def test_a_tensor_scalar_eager_rejects_is_rejected(call):
    def f(ps):
        call(ps)
        return ps[0] * 1

    with pytest.raises((RuntimeError, TypeError)) as eager:
        f([torch.ones(2), torch.ones(2)])
    with pytest.raises((RuntimeError, TypeError), match="eager PyTorch rejects this too"):
        fusion_alias.jit(f, backend="reference")([torch.ones(2), torch.ones(2)])


def test_plain_thunder_is_left_as_it_is():
    def f(ps):
        torch._foreach_add_(ps, 1.0)
        return ps[0]

    with pytest.raises(NotImplementedError, match="_foreach_add_"):
        thunder.jit(f)([torch.zeros(2)])


def _addcdiv_with_a_scalars_tensor(a, b, c, d):
    # one value per tensor of the list (hostile probe 12: the tensor was broadcast into every call)
    torch._foreach_addcdiv_([a, b], [c, d], [c + 1, d + 1], torch.tensor([0.1, 0.2]))
    torch._foreach_addcmul_([c, d], [a, b], [a, b], torch.tensor([0.5, -0.5]))


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_per_tensor_scalars_given_as_one_tensor(schedule):
    def make():
        return [torch.arange(1.0, 4.0) + 2 * i for i in range(4)]

    e, j = make(), make()
    _addcdiv_with_a_scalars_tensor(*e)
    fusion_alias.jit(_addcdiv_with_a_scalars_tensor, backend="reference", schedule=schedule)(*j)
    _assert_same(j, e)


@pytest.mark.parametrize("amsgrad", [False, True], ids=["adam", "amsgrad"])
@pytest.mark.parametrize("size", [3, 4])
def test_torch_optim_functional_adam_foreach(size, amsgrad):
    # torch.optim.adam.adam(foreach=True), parameters at different steps (its step sizes become a tensor);
    # amsgrad calls torch._foreach_maximum_ (Note [foreach maximum is clamp_min per tensor])
    import torch.optim.adam as adam

    def step(params, grads, m, v, v_max, steps):
        adam.adam(params, grads, m, v, v_max, steps, foreach=True, amsgrad=amsgrad, beta1=0.9, beta2=0.999,
                  lr=0.1, weight_decay=0.0, eps=1e-8, maximize=False)

    def state():
        g = torch.Generator().manual_seed(0)
        return ([torch.randn(size, generator=g) for _ in range(3)], [torch.randn(size, generator=g) for _ in range(3)],
                [torch.zeros(size) for _ in range(3)], [torch.rand(size, generator=g) for _ in range(3)],
                [torch.rand(size, generator=g) for _ in range(3)] if amsgrad else [],
                [torch.tensor(float(5 * i)) for i in range(3)])

    want = state()
    step(*want)
    for schedule in SCHEDULES:
        got = state()
        fusion_alias.jit(step, backend="reference", schedule=schedule)(*got)
        _assert_same(got, want)


def test_order_dependent_operand_with_a_scalars_tensor_is_refused_as_per_tensor():
    # a scalars tensor runs each tensor's addcmul_ as one composite named addcmul_, so an expanded view of the
    # written tensor as operand is refused as eager's memory-order result would be (fuzz seed 2025 #9)
    def f(h, a):
        torch._foreach_addcmul_([h], [a], [a], torch.tensor([2.0]))
        return h

    x = torch.randn(4, 4)
    with pytest.raises(fusion_alias.AliasInputError, match="depends on the order"):
        fusion_alias.jit(f, backend="reference")(x, x[1].expand(4, 4))


# Note [a foreach op given one tensor twice] (foreach_lookasides.py): eager's gradient is that of one of
# the two writes, so such a call is refused where it computes gradients, and runs where it does not.
def _listed_twice(a):
    torch._foreach_mul_([a, a], 2.0)
    return a * 1


def _passed_twice(a, b):
    torch._foreach_mul_([a, b], 2.0)
    return a * 1


def _result_of_an_inplace_op(a):
    b = a.add_(1)  # eager's b is a itself
    torch._foreach_mul_([a, b], 2.0)
    return a * 1


def _sigmoid_listed_twice(a):
    torch._foreach_sigmoid_([a, a])
    return a * 1


def _two_views(a):
    torch._foreach_mul_([a[0], a[1]], 2.0)  # views that share no element
    return a * 1


def _crossed_rows(a):
    torch._foreach_add_([a[0], a[1]], [a[1], a[0]])  # a[1] += the new a[0]: eager's gradient reads the old one
    return a * 1


def _transposed_twice(a):
    torch._foreach_mul_([a.t(), a], 2.0)
    return a * 1


def _disjoint_rows(a):
    torch._foreach_add_([a[0], a[1]], [a[1], a[1]])  # position 0 reads a[1] before position 1 writes it: eager's too
    return a * 1


@pytest.mark.parametrize("fn, what", [
    (_listed_twice, "list positions 0 and 1 name one tensor"),
    (_passed_twice, "list position 0 writes a, and position 1 reads or writes b"),
    (_result_of_an_inplace_op, "list position 0 writes a, and position 1"),
    (_sigmoid_listed_twice, "list positions 0 and 1 name one tensor"),
    (_crossed_rows, "list position 0 writes"), (_transposed_twice, "list position 0 writes"),
], ids=lambda x: getattr(x, "__name__", ""))
def test_one_tensor_twice_with_gradients_is_refused(fn, what):
    x = torch.tensor([[1.0, 2.0], [3.0, -4.0]], requires_grad=True)
    a = x * 1
    args = (a, a) if fn is _passed_twice else (a,)
    with pytest.raises(fusion_alias.AliasInputError, match=re.escape(what) + ".*computes gradients: not supported"):
        fusion_alias.jit(fn, backend="reference")(*args)


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("fn", [_listed_twice, _passed_twice, _result_of_an_inplace_op, _sigmoid_listed_twice,
                                _crossed_rows, _transposed_twice], ids=lambda f: f.__name__)
def test_one_tensor_twice_without_gradients_matches_eager(fn, schedule):
    jitted = fusion_alias.jit(fn, backend="reference", schedule=schedule)
    for _ in range(2):
        a_e, a_j = torch.tensor([[1.0, -2.0], [3.0, 0.5]]), torch.tensor([[1.0, -2.0], [3.0, 0.5]])
        args_e, args_j = ((a_e, a_e), (a_j, a_j)) if fn is _passed_twice else ((a_e,), (a_j,))
        torch.testing.assert_close(jitted(*args_j), fn(*args_e))
        torch.testing.assert_close(a_j, a_e)


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("fn", [_two_views, _disjoint_rows], ids=lambda f: f.__name__)
def test_lists_eager_differentiates_as_it_computes_match_eager(fn, schedule):
    """Note [which foreach lists eager differentiates as it computes] (refusals/foreach_lists.py)."""
    grads = []
    for run in (fn, fusion_alias.jit(fn, backend="reference", schedule=schedule)):
        x = torch.tensor([[1.0, 2.0], [3.0, -4.0]], requires_grad=True)
        out = run(x * 1)
        out.sum().backward()
        grads.append((out.detach(), x.grad))
    torch.testing.assert_close(grads[1], grads[0])


def _foreach_lerp_of_views(a, b, c):
    torch._foreach_lerp_([a, b], [c, c], 0.5)
    return a * 1


def _lerp_into_an_ema(a, b, c):
    ema = a.detach() * 1
    ema.lerp_(b, 0.1)  # an EMA of a value that requires grad, then a lerp that needs its own gradient
    return torch.lerp(b, c, c.sigmoid()) + ema, a.lerp_(c, 0.25)


@pytest.mark.parametrize("fn", [_foreach_lerp_of_views, _lerp_into_an_ema], ids=lambda f: f.__name__)
def test_lerp_with_gradients_matches_eager(fn):
    """Thunder 0.2.6 has no gradient for lerp; fusion_alias's executor lends eager's (eager_gradients.py)."""
    def make_inputs():
        x = torch.tensor([1.0, 2.0, -0.5], requires_grad=True)
        return [x], [x * 1, x * 2, x * 3]

    assert_matches_eager(fn, make_inputs)
