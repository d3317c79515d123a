"""Session 34 (helper), found by the dtype generator's new reductions (fuzz seed 40155 #33, dtype): eager's
``softmax``/``log_softmax`` kernels allocate a contiguous result whatever the operand's layout; fusion_alias's layout
model (layouts.py) gives the result its operand's layout (the decomposition's elementwise ops keep it). So
``torch.softmax(a, 0).reshape(3, 8)`` of a transposed ``a`` is taken for a copy where eager makes a view: a write
through it never reaches the softmax's result, silently (plain ``thunder.jit`` is right), and ``.view(3, 4, 2)``
of it is refused where eager runs. Fixed in the layout model (layouts.py, Note [a softmax's result is contiguous]; the
helper's patch, applied once ``written_memory`` moved out of layouts.py); these tests were strict xfails until then."""

import pytest
import torch

import fusion_alias

SCHEDULES = ("reads-first", "writes-first")


def _transposed():
    return torch.arange(24.0).reshape(2, 3, 4).transpose(0, 1) / 10


def write_through_reshape(a):
    s = torch.softmax(a, 0)
    r = s.reshape(3, 8)
    r.mul_(2)
    return s


def write_through_flatten(a):
    s = a.log_softmax(-1)
    r = s.flatten()
    r.add_(1)
    return s, r


def view_of_the_result(a):
    return a.softmax(1, dtype=torch.float64).view(3, 4, 2)


def rms_norm_written_through_reshape(a):
    """(session 34 probe: the same class, ``rms_norm``; ``layer_norm``, ``normalize``, ``cumsum`` and 20 other ops
    of a transposed operand were right already)"""
    s = torch.nn.functional.rms_norm(a, (a.shape[-1],))
    s.reshape(-1).mul_(2)
    return s


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("fn", [write_through_reshape, write_through_flatten, view_of_the_result,
                                rms_norm_written_through_reshape],
                         ids=lambda f: f.__name__)
def test_a_softmax_result_is_contiguous_as_in_eager(fn, schedule):
    a_e, a_j = _transposed(), _transposed()
    expected = fn(a_e)
    got = fusion_alias.jit(fn, backend="reference", schedule=schedule)(a_j)
    for g, e in zip(got if isinstance(got, tuple) else (got,), expected if isinstance(expected, tuple) else (expected,)):
        torch.testing.assert_close(g, e)
        assert g.stride() == e.stride()
    torch.testing.assert_close(a_j, a_e)
