"""Session 42 (helper-69): ``t.copy_(s)``, ``t.fill_(v)``, ``t.zero_()`` of a ``t`` that requires grad send a zero
gradient to ``t``'s old value, as eager's ``CopyBackwards``/``FillBackward0``/``ZeroBackward0`` do, through the ops
that computed it (overwrite_gradients.py, Note [an overwritten value gets a zero gradient]).

Fuzz ``--special-values --grad`` seed 20965 #41: ``a.mul_(0.5); t1 = a.cos() * a; t2 = t1 * 0.5; t2.zero_()``: eager's
zero reaches ``mul``'s backward, ``0 * a`` is NaN where ``a`` is inf, so eager's ``a.grad`` is NaN there; the
functionalized program dropped the old value and gave a finite gradient (plain ``thunder.jit`` too). Checked against
eager on fresh inputs with infinities (values, written inputs, gradients with NaN compared as equal, None against
None), reference schedules, first and cached call.
"""

import pytest
import torch

import fusion_alias
from tests.grad_helpers import assert_runs_like_eager

INF = float("inf")


def fuzz_20965_41(a, b):
    a.mul_(0.5)
    t0 = a.cos()
    t1 = t0 * a
    t2 = t1 * 0.5
    t2.zero_()
    return t2, a


def fill_number(a, b):
    return (a * b).fill_(2.0)


def fill_keyword(a, b):
    return (a * b).fill_(value=3.0)


def fill_tensor(a, b):
    return (a * b).fill_(b.sum())


def torch_fill(a, b):
    return torch.fill_(a * b, 1.5)


def zero(a, b):
    return (a * b).zero_()


def copy_from(a, b):
    return (a * b).copy_(b.cos())


def copy_broadcast(a, b):
    return (a * b).view(2, 2).copy_(b[:2])


def copy_into_a_view(a, b):
    t = a * b
    t[:2].copy_(b[2:])
    return t


def copy_of_another_dtype(a, b):
    return (a * b).copy_(b.double() * 2)


def copy_into_an_argument(a, b):
    a.copy_(b * 2)
    return a


def fill_under_no_grad(a, b):
    t = a * b
    with torch.no_grad():
        t.fill_(1.0)
    return t + b


PROGRAMS = [fuzz_20965_41, fill_number, fill_keyword, fill_tensor, torch_fill, zero, copy_from, copy_broadcast,
            copy_into_a_view, copy_of_another_dtype, copy_into_an_argument, fill_under_no_grad]
VALUES = {
    "finite": ([0.5, 1.0, -2.0, 0.25], [1.5, 2.0, 3.0, -4.0]),
    "infinities": ([1e5, 1.0, -INF, 0.5], [INF, 2.0, 3.0, 4.0]),
}


def _run(fn, values):
    xs, ys = values
    la, lb = torch.tensor(xs, requires_grad=True), torch.tensor(ys, requires_grad=True)
    args = [la * 1, lb * 1]
    outs = fn(*args)
    outs = outs if isinstance(outs, tuple) else (outs,)
    diff = [o for o in outs if o.requires_grad]
    if diff:
        sum((o.double() * (torch.arange(o.numel()) + 1).reshape(o.shape)).sum() for o in diff).backward()
    return [o.detach() for o in outs], [x.detach() for x in args], [la.grad, lb.grad]


@pytest.mark.parametrize("values", sorted(VALUES))
@pytest.mark.parametrize("fn", PROGRAMS, ids=lambda f: f.__name__)
def test_matches_eager(fn, values):
    try:
        _run(fn, VALUES[values])
    except RuntimeError as e:
        pytest.skip(f"eager raises: {e}")
    assert_runs_like_eager(fn, _run, VALUES[values])


def copy_a_row_into_itself(x):
    return x.copy_(x[0])


def copy_transposed_into_itself(x):
    return x.copy_(x.t())


def copy_shifted_slice(x):
    return x[1:].copy_(x[:-1])


def floor_div_by_a_row(x):  # (layout --grad 35058 #47: eager's overlap check of the in-place op itself)
    return x.div_(x[0], rounding_mode="floor")


@pytest.mark.parametrize("grad", [False, True], ids=["no_grad", "grad"])
@pytest.mark.parametrize("fn", [copy_a_row_into_itself, copy_transposed_into_itself, copy_shifted_slice,
                                floor_div_by_a_row], ids=lambda f: f.__name__)
def test_an_overlapping_source_is_still_refused(fn, grad):
    """The joined value is new memory: a source that overlaps the destination keeps the copy as it was, and eager's
    "refer to a single memory location" refusal."""
    def make():
        return torch.arange(9.0).reshape(3, 3).add(1).requires_grad_(grad) * 1

    with pytest.raises(RuntimeError, match="single memory location"):
        fn(make())
    with pytest.raises(RuntimeError, match="single memory location"):
        fusion_alias.jit(fn, backend="reference")(make())
