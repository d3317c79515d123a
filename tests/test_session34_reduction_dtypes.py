"""Session 34: reductions given ``dtype=`` (fusion_alias/reduction_dtypes.py, Note [a dtype= eager refuses]).

Hand probes of ``sum``/``prod``/``mean``/``cumsum``/``cumprod``/``nansum``/``softmax``/``log_softmax``/
``vector_norm`` with ``dtype=``, over ten input dtypes and eleven ``dtype=`` values, after an in-place write of an
aliased argument: every value and dtype was eager's; these ran where eager raises (plain ``thunder.jit`` too):
``mean(dtype=<integer or bool>)``, ``softmax``/``log_softmax`` with an integer ``dtype``, ``cumsum_``/``cumprod_``
with another dtype than the tensor's (``cumprod_`` Thunder does not trace: refused as such). On the code before (b6e9b87)
every refused case below ran (22, both schedules), and so did the integer ``cumsum_`` and the message checks. Each case
runs eager and the compiled function on fresh inputs under both schedules: both raise, or the values, dtypes and
the written input match."""

import pytest
import torch
import torch.nn.functional as F

import fusion_alias

SCHEDULES = ("reads-first", "writes-first")


def _float():
    return torch.tensor([[1.5, -2.0, 3.25], [0.5, 4.0, -6.0]])


def _int():
    return torch.tensor([[1, -2, 3], [4, 5, -6]])


REFUSED = {
    "mean_int64": lambda x: x.mean(dtype=torch.int64),
    "mean_int32_dim": lambda x: torch.mean(x, 0, dtype=torch.int32),
    "mean_bool": lambda x: x.mean(1, keepdim=True, dtype=torch.bool),
    "softmax_int64": lambda x: torch.softmax(x, 0, dtype=torch.int64),
    "softmax_int32_method": lambda x: x.softmax(1, dtype=torch.int32),
    "softmax_positional_dtype": lambda x: torch.softmax(x, 1, torch.int16),
    "F_softmax_int32": lambda x: F.softmax(x, 1, dtype=torch.int32),
    "log_softmax_int64": lambda x: x.log_softmax(0, dtype=torch.int64),
    "F_log_softmax_int32": lambda x: F.log_softmax(x, dim=1, dtype=torch.int32),
    "cumsum__int64": lambda x: x.cumsum_(0, dtype=torch.int64),
    "cumsum__float64": lambda x: x.cumsum_(1, dtype=torch.float64),
}

RUNNING = {
    "mean_float64": lambda x: x.mean(dtype=torch.float64),
    "mean_complex": lambda x: torch.mean(x, 1, dtype=torch.complex64),
    "nanmean_float16": lambda x: x.nanmean(0, dtype=torch.float16),
    "softmax_float64": lambda x: torch.softmax(x, 0, dtype=torch.float64),
    "softmax_method": lambda x: x.softmax(1),
    "F_softmax_float16": lambda x: F.softmax(x, dim=1, dtype=torch.float16),
    "log_softmax_float64": lambda x: x.log_softmax(1, dtype=torch.float64),
    "cumsum__own_dtype": lambda x: x.cumsum_(1, dtype=torch.float32),
    "cumsum__no_dtype": lambda x: x.cumsum_(0),
    "cumsum_int64": lambda x: x.cumsum(1, dtype=torch.int64),
    "sum_float16": lambda x: x.sum(0, dtype=torch.float16),
    "prod_float64": lambda x: x.prod(1, dtype=torch.float64),
    "sum_int8": lambda x: x.sum(dtype=torch.int8),
}


def _after_a_write(call):
    def fn(x, y):
        y.mul_(1)  # (y is a view of x: an in-place write through an alias first)
        return call(x), x
    return fn


def _compare(call, make, schedule):
    fn = _after_a_write(call)
    x_e, x_j = make(), make()
    try:
        expected = fn(x_e, x_e[0])
    except (RuntimeError, NotImplementedError) as e:
        with pytest.raises(type(e)):
            fusion_alias.jit(fn, backend="reference", schedule=schedule)(x_j, x_j[0])
        return "raised"
    got = fusion_alias.jit(fn, backend="reference", schedule=schedule)(x_j, x_j[0])
    for g, e in zip(got, expected):
        assert g.dtype == e.dtype and g.shape == e.shape
        torch.testing.assert_close(g, e, equal_nan=True)
    torch.testing.assert_close(x_j, x_e)
    return "ran"


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("name", list(REFUSED))
def test_refused_as_eager_refuses(name, schedule):
    assert _compare(REFUSED[name], _float, schedule) == "raised"


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("name", list(RUNNING))
def test_runs_as_eager(name, schedule):
    assert _compare(RUNNING[name], _float, schedule) == "ran"


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_integer_inputs(schedule):
    assert _compare(lambda x: x.mean(dtype=torch.float64), _int, schedule) == "ran"
    assert _compare(lambda x: x.mean(), _int, schedule) == "raised"
    assert _compare(lambda x: x.softmax(0, dtype=torch.float32), _int, schedule) == "ran"
    assert _compare(lambda x: x.cumsum_(0, dtype=torch.int32), _int, schedule) == "raised"


def test_the_messages_name_the_problem():
    with pytest.raises(RuntimeError, match="Optional dtype must be either a floating point or complex dtype. Got: Long"):
        fusion_alias.jit(lambda x: x.mean(dtype=torch.int64), backend="reference")(_float())
    with pytest.raises(NotImplementedError, match="no softmax of an integer or bool dtype"):
        fusion_alias.jit(lambda x: torch.softmax(x, 0, dtype=torch.int64), backend="reference")(_float())
    with pytest.raises(RuntimeError, match="Bad in-place call: .*torch.float32.*torch.int64 should match"):
        fusion_alias.jit(lambda x: x.cumsum_(0, dtype=torch.int64), backend="reference")(_float())
