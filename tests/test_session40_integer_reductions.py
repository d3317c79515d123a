"""Session 40 (helper): ``sum``/``prod`` to an integer ``dtype`` of a tensor that requires grad, in grad mode.

Eager raises "Autograd not support dtype: Int" (``Long``, ``Byte``, ...); fusion_alias (and plain
``thunder.jit``) converted and reduced: a missed rejection (fuzz ``--grad`` seed 31065 #3,
``b.prod(dtype=torch.int32)``). Refused now with eager's words (bool_reductions.py, Note [a reduction to an
integer dtype of a value that requires grad]); the neighbours eager runs still run and match eager (every
reference schedule).
"""

import pytest
import torch

import fusion_alias
from tests.grad_helpers import assert_matches_eager

SCHEDULES = ["reads-first", "writes-first"]

REFUSED = {
    "prod_method_int32": lambda w: (w * 2, w.prod(dtype=torch.int32)),
    "sum_method_int64_dim": lambda w: (w * 2, w.sum(0, dtype=torch.int64)),
    "torch_sum_int64": lambda w: (w * 2, torch.sum(w, 0, dtype=torch.int64)),
    "torch_prod_uint8": lambda w: (w * 2, torch.prod(w, 0, dtype=torch.uint8)),
    "sum_of_a_product_int16": lambda w: ((w * 3).sum(dtype=torch.int16), w * 1),
    "sum_after_a_write": lambda w: (lambda x: (x.mul_(w), x.sum(dtype=torch.int32)))(torch.ones(3)),
}


def _leaf():
    return torch.arange(1.0, 4.0).requires_grad_()


@pytest.mark.parametrize("name", list(REFUSED))
def test_refused_as_eager_refuses(name):
    fn = REFUSED[name]
    with pytest.raises(RuntimeError, match="Autograd not support dtype"):
        fn(_leaf())
    for schedule in SCHEDULES:
        with pytest.raises(RuntimeError, match="Autograd not support dtype"):
            fusion_alias.jit(fn, schedule=schedule)(_leaf())


def under_no_grad(w):
    with torch.no_grad():
        s = w.sum(dtype=torch.int32)
    return w * 2, s


def of_a_detached_tensor(w):
    return w * 2, w.detach().prod(dtype=torch.int64)


def to_a_floating_dtype(w):
    return w.sum(dtype=torch.float64), w.prod(0, dtype=torch.float64)


def of_an_integer_tensor(w, i):
    return w * 2, i.sum(dtype=torch.int32), torch.prod(i, 0, dtype=torch.int64)


NEIGHBOURS = [under_no_grad, of_a_detached_tensor, to_a_floating_dtype]


@pytest.mark.parametrize("fn", NEIGHBOURS, ids=lambda f: f.__name__)
def test_eager_valid_neighbours_match_eager(fn):
    def make():
        w = _leaf()
        return [w], (w,)

    assert_matches_eager(fn, make)


def test_integer_tensor_matches_eager():
    def make():
        w = _leaf()
        return [w], (w, torch.arange(1, 4))

    assert_matches_eager(of_an_integer_tensor, make)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_without_gradients_runs(schedule):
    fn = REFUSED["torch_sum_int64"]
    want = fn(torch.arange(1.0, 4.0))
    got = fusion_alias.jit(fn, schedule=schedule)(torch.arange(1.0, 4.0))
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w)
