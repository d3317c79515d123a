"""Session 36 (helper): a Python complex number filled into a tensor that is not complex.

A hand probe of numbers written into tensors of float32, float16, int64, bool and complex64 (``fill_``,
``torch.fill_``, ``masked_fill``/``masked_fill_``, ``index_fill_``, ``setitem``, ``full_like``, ``clamp_``,
``where``), through a row of an argument too, found: ``fill_`` of ``1j`` or ``2.5 + 1j`` into a float or integer
tensor, and ``nan + 0j`` into an integer one, ran where eager raises "value cannot be converted to type ... without
overflow" (plain ``thunder.jit`` raises); ``masked_fill``/``masked_fill_`` ran them too (plain ``thunder.jit`` as
well); ``masked_fill`` of a real tensor with ``1 + 0j`` returned complex64 where eager keeps the tensor's dtype,
silently (plain ``thunder.jit`` too), and of an integer one failed in Python's ``int()``. Fixed:
complex_fill_values.py, Note [a complex fill value of a real tensor]."""

import pytest
import torch

import fusion_alias

SCHEDULES = ("reads-first", "writes-first")
DTYPES = {"float32": torch.float32, "float16": torch.float16, "int64": torch.int64, "bool": torch.bool,
          "complex64": torch.complex64}
VALUES = {"1j": 1j, "1+0j": 1 + 0j, "2.5+1j": 2.5 + 1j, "nan+0j": complex(float("nan"), 0), "-3+0j": -3 + 0j}


def _base(dtype):
    x = torch.arange(12.0).reshape(3, 4) / 3 - 1.5
    return x > 0 if dtype is torch.bool else x.to(dtype)


OPS = {
    "fill_": lambda x, y, v: (x.fill_(v), y * 1),
    "row fill_": lambda x, y, v: (y.fill_(v), x * 1),
    "torch.fill_": lambda x, y, v: (torch.fill_(x[1:], v), y + 0),
    "masked_fill_": lambda x, y, v: (x.masked_fill_(x != y, v), y * 1),
    "row masked_fill_": lambda x, y, v: (y.masked_fill_(y == y, v), x * 1),
    "masked_fill": lambda x, y, v: (x.masked_fill(x == x[0], v), y.masked_fill(y != y, v)),
    "torch.masked_fill": lambda x, y, v: torch.masked_fill(x, x != x, v),
}


def _outcome(f, dtype, schedule=None):
    x = _base(dtype)
    g = f if schedule is None else fusion_alias.jit(f, schedule=schedule)
    try:
        out = g(x, x[1])
    except RuntimeError as e:
        return ("raised", str(e).split("\n")[0])
    return ("ok", out, x)


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("op", list(OPS))
@pytest.mark.parametrize("value", list(VALUES))
@pytest.mark.parametrize("dtype", list(DTYPES))
def test_a_complex_fill_value_is_eagers(dtype, value, op, schedule):
    v = VALUES[value]

    def f(x, y):
        return OPS[op](x, y, v)

    expected = _outcome(f, DTYPES[dtype])
    got = _outcome(f, DTYPES[dtype], schedule)
    assert got[0] == expected[0], (expected, got)
    if expected[0] == "raised":
        assert "without overflow" in expected[1] and "without overflow" in got[1], (expected[1], got[1])
        return
    want = [*(expected[1] if isinstance(expected[1], tuple) else (expected[1],)), expected[2]]
    have = [*(got[1] if isinstance(got[1], tuple) else (got[1],)), got[2]]
    for w, h in zip(want, have):
        assert h.dtype == w.dtype
        torch.testing.assert_close(h, w, equal_nan=True)
