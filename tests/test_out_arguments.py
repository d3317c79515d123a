"""``out=`` arguments of elementwise torch functions (out_arguments.py, Note [out= is an in-place op]):
compared with eager on fresh copies of the inputs, outputs and mutated inputs, under every schedule."""

import pytest
import torch

import fusion_alias
from fusion_alias.backends.reference import SCHEDULES
from fusion_alias.errors import AliasInputError
from fusion_alias.out_arguments import OutArgumentError
from helpers import region_count


def _inputs(kind: str):
    torch.manual_seed(0)
    x = torch.randn(4, 4)
    if kind == "apart":
        return x, torch.zeros(4, 4)
    if kind == "same":  # out is the operand itself: eager's in-place op
        return x, x
    if kind == "disjoint":  # two halves of one buffer
        b = torch.randn(8, 4)
        return b[:4], b[4:]
    if kind == "float64":
        return x, torch.zeros(4, 4, dtype=torch.float64)
    raise ValueError(kind)


def _add(x, o):
    torch.add(x, 2, out=o)
    return x + o


def _mul_itself(x, o):
    r = torch.mul(x, x, out=o)
    return r * 1, x * 1


def _chain(x, o):
    torch.add(x, 1, out=o)
    torch.mul(o, 3, out=x)
    return x + o


def _where_exp_gt(x, o):
    torch.where(x > 0, x, torch.zeros_like(x), out=o)
    torch.exp(o, out=o)
    flags = torch.zeros(4, 4, dtype=torch.bool)
    torch.gt(o, 1.5, out=flags)
    return o * 1, flags


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("kind", ["apart", "same", "disjoint", "float64"])
@pytest.mark.parametrize("fn", [_add, _mul_itself, _chain, _where_exp_gt])
def test_out_runs_as_in_eager(fn, kind, schedule):
    if fn is _where_exp_gt and kind == "float64":
        pytest.skip("where takes only its result's dtype as out: test_out_of_another_dtype_where_eager_takes_only_the_results_own")
    got_args, want_args = _inputs(kind), _inputs(kind)
    got = fusion_alias.jit(fn, backend="reference", schedule=schedule)(*got_args)
    want = fn(*want_args)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype
        torch.testing.assert_close(g, w)
    for g, w in zip(got_args, want_args):  # the buffers written
        torch.testing.assert_close(g, w)


def test_a_write_through_out_fuses_with_what_reads_it():
    def f(x, o):
        torch.add(x, 1, out=o)
        return o * 2

    jitted = fusion_alias.jit(f, backend="reference")
    x, o = torch.randn(4), torch.zeros(4)
    torch.testing.assert_close(jitted(x, o), (x + 1) * 2)
    torch.testing.assert_close(o, x + 1)
    assert region_count(jitted) == 1


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_out_that_partly_overlaps_an_operand_is_refused_as_eager_refuses_it(schedule):
    y = torch.randn(4, 4)
    with pytest.raises(RuntimeError, match="single memory location"):
        _add(y, y.t())  # eager
    z = torch.randn(4, 4)
    before = z.clone()
    with pytest.raises(AliasInputError, match="single memory location"):
        fusion_alias.jit(_add, backend="reference", schedule=schedule)(z, z.t())
    assert torch.equal(z, before)  # refused before anything ran


def test_a_result_out_cannot_hold_is_refused_with_eagers_message():
    def f(x, o):
        return torch.add(x, 0.5, out=o)

    x, o = torch.randn(4), torch.zeros(4, dtype=torch.long)
    with pytest.raises(RuntimeError, match="can't be cast to the desired output type Long"):
        f(x, o.clone())
    with pytest.raises(RuntimeError, match="can't be cast to the desired output type Long"):
        fusion_alias.jit(f, backend="reference")(x, o)


def test_out_of_another_shape_is_refused_naming_the_resize():
    def f(x, o):
        return torch.exp(x, out=o)

    f(torch.randn(4), torch.empty(0))  # eager resizes o
    with pytest.raises(OutArgumentError, match="eager resizes o"):
        fusion_alias.jit(f, backend="reference")(torch.randn(4), torch.empty(0))


@pytest.mark.parametrize("fn", [
    lambda x, o: torch.add(x, 1, out=o),
    lambda x, o: torch.add(x * 2, 1, out=o),  # an intermediate's proxy does not say it requires grad
    lambda x, o: torch.exp(x.sin(), out=o),
])
def test_out_of_a_value_that_requires_grad_is_refused_as_eager_refuses_it(fn):
    x, o = torch.randn(3, requires_grad=True), torch.zeros(3)
    with pytest.raises(RuntimeError, match="don't support automatic differentiation"):
        fn(x, o.clone())
    with pytest.raises(RuntimeError, match="don't support automatic differentiation"):
        fusion_alias.jit(fn, backend="reference")(x, o)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_out_under_no_grad_and_of_detached_values_runs_in_a_call_with_gradients(schedule):
    def f(x, c, o, p):
        with torch.no_grad():
            torch.add(x, 1, out=o)
        torch.mul(x.detach(), 2, out=p)
        torch.add(c, p, out=p)
        return (x * o).sum() + (x * p).sum()

    def inputs():
        torch.manual_seed(1)
        return torch.randn(3, requires_grad=True), torch.randn(3), torch.zeros(3), torch.zeros(3)

    got_args, want_args = inputs(), inputs()
    got = fusion_alias.jit(f, backend="reference", schedule=schedule)(*got_args)
    want = f(*want_args)
    got.backward()
    want.backward()
    torch.testing.assert_close(got, want)
    torch.testing.assert_close(got_args[0].grad, want_args[0].grad)
    for g, w in zip(got_args[1:], want_args[1:]):
        torch.testing.assert_close(g, w)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_calls_without_out_are_thunders(schedule):
    def f(x, y):
        return torch.add(x, y, alpha=2), torch.where(x > 0, x, y), torch.clamp(x, min=0), torch.pow(x, 2)

    x, y = torch.randn(4, 4), torch.randn(4, 4)
    for g, w in zip(fusion_alias.jit(f, backend="reference", schedule=schedule)(x, y), f(x, y)):
        torch.testing.assert_close(g, w)


@pytest.mark.parametrize("name", ["where", "clamp", "abs", "floor"])
def test_out_of_another_dtype_where_eager_takes_only_the_results_own(name):
    # out_arguments.py, Note [out dtypes eager takes exactly]
    def f(x, o):
        if name == "where":
            return torch.where(x > 0, x, torch.zeros_like(x), out=o)
        if name == "clamp":
            return torch.clamp(x, 0.1, 0.5, out=o)
        return getattr(torch, name)(x, out=o)

    x = torch.randn(4)
    with pytest.raises(RuntimeError, match="Double"):  # (eager's words differ by op: "Found dtype Double but expected Float")
        f(x, torch.zeros(4, dtype=torch.float64))
    with pytest.raises(RuntimeError, match="(?i)expected out type to be Float but got Double"):
        fusion_alias.jit(f, backend="reference")(x, torch.zeros(4, dtype=torch.float64))
    got, o = fusion_alias.jit(f, backend="reference")(x, torch.zeros(4)), torch.zeros(4)
    torch.testing.assert_close(got, f(x, o))
