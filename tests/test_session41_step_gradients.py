"""Session 41 (helper-68): ``floor``/``ceil`` of a tensor that requires grad carry eager's zero gradient, and
``floor_divide`` of one is refused as eager's backward refuses it (step_gradients.py, Note [floor and ceil carry a
zero gradient], Note [floor_divide has no derivative]).

Thunder 0.2.6 takes ``prims.floor``/``prims.ceil`` as not differentiable: ``x.floor().sum()`` came back requiring no
grad and ``x.grad`` stayed None where eager's is zeros. Checked against eager on fresh inputs (values, written
inputs, gradients, each output's ``requires_grad``; the reference schedules, first and cached call), in programs
that write in place and programs that do not, and the values at special points (NaN, infinities, signed zeros, .5).
"""

import pytest
import torch

import fusion_alias
from tests.grad_helpers import assert_matches_eager, assert_requires_grad_flags_match

SCHEDULES = ["reads-first", "writes-first"]


def floor_summed(x, y):
    return x.floor().sum()


def ceil_broadcast(x, y):
    return torch.ceil(x) + y


def floor_of_a_product(x, y):
    return (x * y).floor()


def floor_of_the_second(x, y):
    return y.floor(), x * 2


def floor_half(x, y):
    return x.half().floor()


def floor_method_by_name(x, y):
    return torch.floor(input=x) * y


def floor_after_a_write(x, y):
    x.mul_(2)
    return x.floor(), y.ceil()


def floor_written(x, y):
    t = x.floor()
    t.add_(y)
    return t


def floor_of_detached(x, y):
    return x.detach().floor(), y * 1


def floor_under_no_grad(x, y):
    with torch.no_grad():
        t = x.floor()
    return t, y * 1


def div_rounding_floor(x, y):  # (another op: eager's zero gradient, Thunder's already)
    return torch.div(x, y, rounding_mode="floor")


PROGRAMS = [floor_summed, ceil_broadcast, floor_of_a_product, floor_of_the_second, floor_half, floor_method_by_name,
            floor_after_a_write, floor_written, floor_of_detached, floor_under_no_grad, div_rounding_floor]


def _make():
    wx = (torch.arange(12.0).reshape(3, 4) * 0.7 - 4).requires_grad_()
    wy = (torch.arange(4.0) * 0.3 + 0.5).requires_grad_()
    return [wx, wy], (wx * 1, wy * 1)


@pytest.mark.parametrize("fn", PROGRAMS, ids=lambda f: f.__name__)
def test_matches_eager(fn):
    assert_matches_eager(fn, _make)


@pytest.mark.parametrize("fn", PROGRAMS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("schedule", SCHEDULES)
def test_requires_grad_flags_are_eagers(fn, schedule):
    assert_requires_grad_flags_match(fn, _make, schedule)


@pytest.mark.parametrize("op", ["floor", "ceil"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
def test_values_at_special_points(op, dtype):
    def fn(x):
        return getattr(x, op)() * 1

    values = torch.tensor([float("nan"), float("inf"), -float("inf"), -0.0, 0.0, -0.5, 0.5, 2.5, -2.5, 1e30, -1e-30])
    x = values.to(dtype).requires_grad_()
    want = fn(x)
    got = fusion_alias.jit(fn, backend="reference")(x)
    assert got.requires_grad and want.requires_grad
    torch.testing.assert_close(got, want, equal_nan=True, rtol=0, atol=0)
    real = ~want.isnan()  # (signed zeros; a NaN's sign bit is no value)
    assert torch.equal(torch.signbit(got)[real], torch.signbit(want)[real])


def floordiv_number(x, y):
    return x // 2


def rfloordiv_number(x, y):
    return 2 // x


def floor_divide_tensors(x, y):
    return torch.floor_divide(x, y)


def floor_divide_method(x, y):
    return x.floor_divide(y) * 1, y * 2


def floordiv_in_place(x, y):
    x //= 2
    return x


def floor_divide_in_place_by_a_tensor(x, y):
    x.floor_divide_(y)
    return x * 1


@pytest.mark.parametrize("fn", [floordiv_number, rfloordiv_number, floor_divide_tensors, floor_divide_method,
                                floordiv_in_place, floor_divide_in_place_by_a_tensor], ids=lambda f: f.__name__)
@pytest.mark.parametrize("schedule", SCHEDULES)
def test_floor_divide_of_a_tensor_that_requires_grad_is_refused(fn, schedule):
    out = fn(*_make()[1])
    out = out[0] if isinstance(out, tuple) else out
    with pytest.raises(RuntimeError, match="derivative for aten::floor_divide_? is not implemented"):
        out.sum().backward()
    with pytest.raises(NotImplementedError, match="derivative for aten::floor_divide is not implemented"):
        fusion_alias.jit(fn, backend="reference", schedule=schedule)(*_make()[1])


@pytest.mark.parametrize("fn", [floordiv_number, rfloordiv_number, floor_divide_tensors, floor_summed,
                                floordiv_in_place], ids=lambda f: f.__name__)
def test_without_gradients_nothing_changes(fn):
    def make():
        return [], (torch.arange(12.0).reshape(3, 4) * 0.7 - 4, torch.arange(4.0) * 0.3 + 0.5)

    want = fn(*make()[1])
    got = fusion_alias.jit(fn, backend="reference")(*make()[1])
    torch.testing.assert_close(got, want, equal_nan=True)
    assert not got.requires_grad
    with torch.no_grad():
        x, y = _make()[1]
        torch.testing.assert_close(fusion_alias.jit(fn, backend="reference")(x, y), fn(x, y), equal_nan=True)


@pytest.mark.parametrize("name", ["asinh", "acosh", "atanh"])
@pytest.mark.parametrize("schedule", SCHEDULES)
def test_in_place_inverse_hyperbolics_are_refused_as_eager_raises(name, schedule):
    def fn(x, y):
        t = x * 0.1 + 1.5 if name == "acosh" else x * 0.1
        getattr(t, name + "_")()
        return t * y

    with pytest.raises(RuntimeError, match=f"derivative for 'inplace version of {name}' is not implemented"):
        fn(*_make()[1]).sum().backward()
    with pytest.raises(NotImplementedError, match=f"inplace version of {name}"):
        fusion_alias.jit(fn, backend="reference", schedule=schedule)(*_make()[1])
    with torch.no_grad():  # (no gradient: eager's values)
        x, y = _make()[1]
        torch.testing.assert_close(fusion_alias.jit(fn, backend="reference", schedule=schedule)(x, y), fn(x, y))
