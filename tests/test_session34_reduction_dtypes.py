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


# The dtype generator's reductions given a dtype (fuzz/dtype_spellings.py, Note [reductions given a dtype in dtype
# programs]): the class above, in the fuzzer. With ``P_REDUCTION_DTYPE`` 0.5, seed 34033's first 40 programs gave 2
# missed rejections on the code before (b6e9b87: #6 and #21, ``torch.mean(x, 0, dtype=torch.bool)`` last), none now.

# (seed, programs, grad) -> sha1 of the rendered dtype programs with the form at its default probability
REDUCTION_STREAMS = {
    (34034, 25, False): "2c619bf318b489909862452ff89b7f0cddec3a52",  # (10 reductions given a dtype)
    (34035, 12, True): "5796c02d1074b3bede2176a844bd9ae373056b9c",  # (4)
}


def _dtype_programs(seed, n, grad=False):
    import warnings

    from fusion_alias.fuzz.generator import generate_program

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return [generate_program(seed, i, generators=("dtype",), grad=grad) for i in range(n)]


@pytest.fixture
def _no_special_values(monkeypatch):
    from fusion_alias.fuzz import dtype_rule_stmts, dtype_spellings, source

    monkeypatch.setattr(source, "SPECIAL_VALUES", False)
    monkeypatch.setattr(dtype_spellings, "P_SCAN_DTYPE", 0.0)  # (session 35's in-place scans: test_session35_generators.py)
    monkeypatch.setattr(dtype_rule_stmts, "P_POW_SPELLING", 0.0)  # (session 46's pow spellings: test_session46_fuzz.py)


@pytest.mark.parametrize("case", list(REDUCTION_STREAMS), ids=lambda c: f"{c[0]}-grad{c[2]}")
def test_the_reduction_stream_is_pinned(case, _no_special_values):
    import hashlib

    from fusion_alias.fuzz import oracle

    h = hashlib.sha1()
    for p in _dtype_programs(*case):
        h.update(oracle.program_source(p).encode())
    assert h.hexdigest() == REDUCTION_STREAMS[case]


def test_the_form_is_drawn_and_off_at_zero(_no_special_values, monkeypatch):
    import re

    from fusion_alias.fuzz import dtype_spellings

    monkeypatch.setattr(dtype_spellings, "P_REDUCTION_DTYPE", 0.5)
    codes = [s.code for p in _dtype_programs(34036, 20) for s in p.stmts]
    reductions = [c for c in codes if re.search(r"(sum|prod|mean|cumsum_?|softmax)\(.*dtype=torch\.", c)]
    assert len(reductions) >= 8, reductions
    assert any(("mean(" in c and "torch.int64" in c) or "cumsum_(" in c or "softmax(" in c for c in reductions)
    monkeypatch.setattr(dtype_spellings, "P_REDUCTION_DTYPE", 0.0)
    assert not any("dtype=torch." in s.code for p in _dtype_programs(34036, 20) for s in p.stmts
                   if re.search(r"(mean|softmax|nansum|cumsum)\(", s.code))


def test_the_fuzzer_runs_reduction_programs_against_fusion_alias(monkeypatch):
    from fusion_alias import fuzz
    from fusion_alias.fuzz import dtype_spellings

    monkeypatch.setattr(dtype_spellings, "P_REDUCTION_DTYPE", 0.5)
    report = fuzz.run_fuzz(seed=34033, only=[6, 21], generators=("dtype",), do_shrink=False)
    assert not report.failures, report.summary()
