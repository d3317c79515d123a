"""Programs the fuzzer found wrong once (python -m fusion_alias.fuzz --seed 2024), now fixed."""

import pytest
import torch

import fusion_alias


def _check(fn, make_inputs, schedule):
    bases_e, args_e = make_inputs()
    bases_j, args_j = make_inputs()
    want = fn(*args_e)
    got = fusion_alias.jit(fn, backend="reference", schedule=schedule)(*args_j)
    torch.testing.assert_close(got, want)
    torch.testing.assert_close(bases_j, bases_e)


def views_of_copy_result_then_write(b):
    # a view of an in-place result escapes the region; a later write must show through it
    t0 = b.mul_(0.5)
    t1 = t0.permute(1, 0)
    b.add_(0.75)
    return t1.transpose(0, 1)


def permuted_copy_result_after_setitem(a, b):
    t0 = b.add_(b)
    a[1::2, 0:1] = 2.0
    return t0.permute(2, 1, 0)


def view_of_fresh_then_write(a):
    c = a * 2
    v = c[0]
    c.add_(1)
    return v, c


@pytest.mark.parametrize("schedule", ["reads-first", "writes-first"])
def test_views_of_copy_result(schedule):
    def make():
        x = torch.linspace(-1, 1, 6).reshape(1, 6)
        return [x], [x]

    _check(views_of_copy_result_then_write, make, schedule)


@pytest.mark.parametrize("schedule", ["reads-first", "writes-first"])
def test_permuted_copy_result_after_setitem(schedule):
    def make():
        x = torch.linspace(-1, 1, 24).reshape(2, 3, 4)
        return [x], [x, x.transpose(0, 1)]

    _check(permuted_copy_result_after_setitem, make, schedule)


@pytest.mark.parametrize("schedule", ["reads-first", "writes-first"])
def test_view_of_fresh_tensor_sees_later_write(schedule):
    def make():
        x = torch.linspace(-1, 1, 12).reshape(3, 4)
        return [x], [x]

    _check(view_of_fresh_then_write, make, schedule)
    v, c = fusion_alias.jit(view_of_fresh_then_write)(torch.randn(3, 4))
    assert v.data_ptr() == c.data_ptr()  # the view is a view of the returned tensor, as in eager
