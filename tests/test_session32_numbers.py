"""Session 32 fuzzing (``--special-values`` dtype stream, seed 40150 #20, #25): a Python int no 64-bit scalar
holds (``2**64``, ``-2**63 - 1``) as an operand. Eager raises ``OverflowError`` whatever the tensor's dtype;
a fused region computed with it as a float and returned a value (scalar_ranges.py, Note [a Python int no
torch scalar holds])."""

import pytest
import torch

import fusion_alias

PROGRAMS = {
    "add_": lambda x, v: x.add_(v) * 1,
    "mul": lambda x, v: x * v,
    "where": lambda x, v: torch.where(x > 1, x, v),
    "fill_": lambda x, v: x.fill_(v) + 0,
    "clamp_": lambda x, v: x.clamp_(max=v) * 1,
}
DTYPES = (torch.float32, torch.float64, torch.complex64, torch.int64)


def _eager(fn, x, v):
    try:
        return fn(x, v), None
    except Exception as e:  # noqa: BLE001
        return None, e


@pytest.mark.parametrize("schedule", ("reads-first", "writes-first"))
@pytest.mark.parametrize("value", (2**64, 2**70, -(2**63) - 1))
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("name", list(PROGRAMS))
def test_an_int_no_scalar_holds_raises_as_in_eager(name, dtype, value, schedule):
    fn = PROGRAMS[name]
    _, error = _eager(fn, torch.tensor([1.0, 2.0]).to(dtype), value)
    if error is None:
        pytest.skip("eager runs it")  # (none here: kept so a torch that accepts it does not fail the test)
    jitted = fusion_alias.jit(lambda x: fn(x, value), backend="reference", schedule=schedule)
    x = torch.tensor([1.0, 2.0]).to(dtype)
    with pytest.raises((OverflowError, RuntimeError, NotImplementedError)):
        jitted(x)


@pytest.mark.parametrize("value", (2**63, 2**64 - 1, -(2**63)))
@pytest.mark.parametrize("name", ["add_", "mul", "where"])
def test_an_int_a_scalar_holds_runs(name, value):
    fn = PROGRAMS[name]
    x_e, x_j = torch.tensor([1.0, 2.0], dtype=torch.float64), torch.tensor([1.0, 2.0], dtype=torch.float64)
    expected = fn(x_e, value)
    got = fusion_alias.jit(lambda x: fn(x, value), backend="reference")(x_j)
    torch.testing.assert_close(got, expected)
    torch.testing.assert_close(x_j, x_e)
