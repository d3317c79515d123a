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


_MORE_ELEMENTWISE = {  # session 20's additions to _ELEMENTWISE: name -> (positive float operands, or ints)
    "acos": "unit", "asinh": "unit", "atanh": "unit", "cosh": "unit", "sinh": "unit", "atan": "unit",
    "deg2rad": "unit", "rad2deg": "unit", "fmax": "pair", "fmin": "pair", "logaddexp": "pair",
    "logaddexp2": "pair", "floor_divide": "pair", "lgamma": "unit", "gcd": "ints", "lcm": "ints",
    "bitwise_left_shift": "ints", "heaviside": "pair", "nan_to_num": "unit", "sgn": "unit",
}


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("name", sorted(_MORE_ELEMENTWISE))
def test_more_elementwise_functions_take_out_as_in_eager(name, schedule):
    kind = _MORE_ELEMENTWISE[name]
    fn = getattr(torch, name)

    def f(x, y, o):
        args = (x,) if kind == "unit" else (x, y)
        fn(*args, out=o)
        fn(*args, out=x)  # out is the operand itself: eager's in-place op
        return o * 1, x * 1

    def inputs():
        torch.manual_seed(0)
        if kind == "ints":
            b = torch.randint(1, 6, (8,))
            return b[:4], torch.randint(1, 4, (4,)), b[4:]  # o: the other half of x's buffer
        b = torch.rand(8) * 0.8 + 0.1
        return b[:4], torch.rand(4) + 0.5, b[4:]

    want, got = inputs(), inputs()
    expected = f(*want)
    result = fusion_alias.jit(f, backend="reference", schedule=schedule)(*got)
    for g, w in zip((*result, *got), (*expected, *want)):
        torch.testing.assert_close(g, w)


def test_more_elementwise_functions_refuse_a_partly_overlapping_out():
    def f(x):
        torch.cosh(x[:4], out=x[1:5])
        return x

    with pytest.raises(RuntimeError, match="single memory location"):
        f(torch.rand(6))
    with pytest.raises(AliasInputError, match="single memory location"):
        fusion_alias.jit(f, backend="reference")(torch.rand(6))


@pytest.mark.parametrize("call", [
    lambda a, b, o: torch.cat([a, b], out=o),
    lambda a, b, o: torch.matmul(a.view(2, 2), b.view(2, 2), out=o.view(2, 2)),
    lambda a, b, o: torch.sum(torch.stack([a, b]), 0, out=o),
    lambda a, b, o: torch.zeros(4, out=o),
], ids=["cat", "matmul", "sum", "zeros"])
def test_out_of_other_functions_is_refused_by_name(call):
    # out_arguments.py, Note [out= of other functions]: eager runs each; Thunder raised a TypeError
    def f(a, b, o):
        call(a, b, o)
        return o + 1

    args = (torch.randn(2), torch.randn(2), torch.empty(4)) if "cat" in call.__code__.co_names else \
        (torch.randn(4), torch.randn(4), torch.empty(4))
    f(*[t.clone() for t in args])  # eager runs it
    name = [n for n in ("cat", "matmul", "sum", "zeros") if n in call.__code__.co_names][0]
    with pytest.raises(OutArgumentError, match=rf"torch\.{name}\(\.\.\., out=o\) is not supported.*o\.copy_"):
        fusion_alias.jit(f, backend="reference")(*args)


def test_plain_thunder_keeps_its_own_error_for_out_of_other_functions():
    import thunder

    def f(a, b, o):
        return torch.cat([a, b], out=o)

    with pytest.raises(TypeError, match="unexpected keyword argument 'out'"):
        thunder.jit(f)(torch.ones(2), torch.ones(2), torch.empty(4))


def test_out_none_spelled_out_is_eagers_default():
    def f(a, b):
        return torch.sum(a, 0, out=None) + torch.cat([a, b], out=None).sum() + torch.add(a, b, out=None)

    a, b = torch.randn(3), torch.randn(3)
    torch.testing.assert_close(fusion_alias.jit(f, backend="reference")(a, b), f(a, b))
