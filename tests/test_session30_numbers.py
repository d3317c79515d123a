"""Session 30: numbers eager converts to an op's dtype, clamps eager has no kernel or store for, and
``x - True``: each program as eager runs it, or eager's refusal (scalar_ranges.py, dtype_rules.py)."""

import pytest
import torch
import torch.nn.functional as F

import fusion_alias
from fusion_alias.scalar_ranges import overflows

BIG = 1e10

# (name, program, dtype of the input): the inputs are ``x`` and a row of it, as the probe ran them
PROGRAMS = [
    ("clamp_half", lambda a, b: (a.clamp_(0, BIG), b * 1), torch.float16),
    ("clamp_min_half", lambda a, b: (torch.clamp(a, min=BIG), b + 1), torch.float16),
    ("clip_max_half", lambda a, b: (a.clip_(max=-BIG), b * 1), torch.float16),
    ("pow_half", lambda a, b: (a.pow_(BIG), b * 1), torch.float16),
    ("alpha_half", lambda a, b: (a.add_(b, alpha=BIG), b * 1), torch.float16),
    ("sub_alpha_half", lambda a, b: torch.sub(a, b, alpha=-BIG), torch.float16),
    ("masked_fill_half", lambda a, b: (a.masked_fill_(b > 0, BIG), b * 1), torch.float16),
    ("hardtanh_half", lambda a, b: F.hardtanh(a, -BIG, BIG), torch.float16),
    ("hardtanh_int", lambda a, b: (F.hardtanh_(a, -BIG, BIG), b * 1), torch.int32),
    ("threshold_int", lambda a, b: F.threshold(a, BIG, 0.0), torch.int32),
    ("fill_int", lambda a, b: (a.fill_(2**31), b * 1), torch.int32),
    ("fill_uint8_wraps", lambda a, b: (a.fill_(-1), b * 1), torch.uint8),  # (runs: 255)
    ("fill_uint8_too_low", lambda a, b: (a.fill_(-256), b * 1), torch.uint8),
    ("addcmul_int", lambda a, b: (a.addcmul_(b, b, value=BIG), b * 1), torch.int32),
    ("addcmul_half_runs", lambda a, b: (a.addcmul_(b, b, value=BIG), b * 1), torch.float16),  # (float32 math)
    ("clamp_int_big_runs", lambda a, b: torch.clamp(a, 0, BIG), torch.int32),  # (float32 result)
    ("clamp_half_inf_runs", lambda a, b: (a.clamp_(0, float("inf")), b * 1), torch.float16),
    ("clamp_half_largest_runs", lambda a, b: (a.clamp_(-65504.0, 65504), b * 1), torch.float16),
    ("pow_half_small_runs", lambda a, b: (a.pow_(2), b * 1), torch.float16),
    ("clamp_bool_ints", lambda a, b: (a.clamp_(0, 2), b * 1), torch.bool),
    ("clamp_int_float_bound", lambda a, b: (a.clamp_(0, 0.5), b * 1), torch.int64),
    ("clamp_int_tensor_bound", lambda a, b: (a.clamp_(torch.tensor(0.5)), b * 1), torch.int64),
    ("clamp_bool_bools", lambda a, b: torch.clamp(a, False, True), torch.bool),
    ("clamp_min_bool", lambda a, b: (a.clamp_min_(True), b * 1), torch.bool),
    ("clamp_bool_one_tensor_runs", lambda a, b: (a.clamp_(b.clone()), b * 1), torch.bool),
    ("clamp_bool_two_tensors", lambda a, b: torch.clamp(a, b, b), torch.bool),
    ("clamp_int_out_of_place_runs", lambda a, b: torch.clamp(a, 0, 0.5), torch.int64),
    ("sub_true", lambda a, b: (a.sub_(True), b * 1), torch.float32),
    ("rsub_false", lambda a, b: False - a, torch.float32),
    ("sub_tensor_runs", lambda a, b: (a.sub_(b), b * 1), torch.float32),
]


def _input(dtype):
    x = torch.arange(-3, 5).reshape(2, 4) % 3
    return x.to(dtype) if dtype is not torch.bool else x > 0


def _run(fn, jitted: bool, schedule: str):
    x = _input(PROGRAMS_BY_NAME[fn][1])
    f = PROGRAMS_BY_NAME[fn][0]
    f = fusion_alias.jit(f, backend="reference", schedule=schedule) if jitted else f
    try:
        out = f(x, x[1])
    except Exception as e:  # noqa: BLE001 - compared with eager's outcome below
        return e
    out = out if isinstance(out, tuple) else (out,)
    return [o.clone() for o in out] + [x.clone()]


PROGRAMS_BY_NAME = {name: (fn, dtype) for name, fn, dtype in PROGRAMS}


@pytest.mark.parametrize("schedule", ["reads-first", "writes-first"])
@pytest.mark.parametrize("name", PROGRAMS_BY_NAME)
def test_numbers_and_clamps_as_eager(name, schedule):
    want, got = _run(name, False, schedule), _run(name, True, schedule)
    if isinstance(want, Exception):
        assert isinstance(got, Exception), f"eager raised {want!r}; fusion_alias returned {got}"
        assert "rejects this too" in str(got), got  # (eager's refusal, by name)
        return
    assert not isinstance(got, Exception), got
    for g, w in zip(got, want):
        assert g.dtype == w.dtype
        torch.testing.assert_close(g, w, equal_nan=True)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32, torch.uint8, torch.int8,
                                   torch.int32, torch.int64, torch.bool])
def test_overflow_rule_is_eagers_fill(dtype):
    """``overflows`` against eager's own ``fill_`` (the conversion every op above shares)."""
    values = [65504.0, 65505.0, 70000.0, 1e39, -1e39, float("inf"), float("nan"), -1, -255, -256, 255, 256, 2**31,
              2**31 - 1, -2**31 - 1, 2**63, 3.5e38, 0.5, -0.5, 127.5, 128.0, 255.5, -128.5, -1.0]
    for v in values:
        try:
            torch.zeros(4, dtype=dtype).fill_(v)  # (4: eager skips the check for one half element)
            eager = False
        except RuntimeError as e:
            assert "overflow" in str(e)
            eager = True
        assert overflows(v, dtype) == eager, (v, dtype)


@pytest.mark.parametrize("numel", [1, 4])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32])
def test_fill_of_one_element_as_eager(dtype, numel):
    """Eager's one-element ``fill_`` of a float16 or bfloat16 tensor stores ``inf`` without the check."""
    fn = lambda a: a.fill_(1e39) * 1  # noqa: E731
    results = []
    for f in (fn, fusion_alias.jit(fn, backend="reference")):
        try:
            results.append(f(torch.zeros(numel, dtype=dtype)))
        except RuntimeError as e:
            results.append(e)
    want, got = results
    assert isinstance(got, Exception) == isinstance(want, Exception), (want, got)
    if not isinstance(want, Exception):
        torch.testing.assert_close(got, want)
