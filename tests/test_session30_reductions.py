"""Session 30: a fused sum or prod of integers has its operand's dtype, as Thunder's trace says and eager
returns: torch's and nvFuser's integer reductions are int64 unless told (ops.py, backends/nvfuser.py)."""

import pytest
import torch

import fusion_alias

PROGRAMS = {
    "sum_as_int32": lambda a: a.sum(dtype=torch.int32) * 1,
    "sum_of_int32_along_a_dim": lambda a: a.to(torch.int32).sum(0, dtype=torch.int32) + 1,
    "wrapping_sum": lambda a: (a.to(torch.int32) * 2**30).sum(dtype=torch.int32) * 1,  # eager wraps to 0
    "prod_as_int16": lambda a: a.to(torch.int16).prod(1, dtype=torch.int16) * 1,
    "sum_written_back": lambda a: a.add_(a.sum(dtype=a.dtype)) * 1,
    "plain_sum": lambda a: a.sum() * 1,
}


@pytest.mark.parametrize("backend", ["auto", "reference"])
@pytest.mark.parametrize("dtype", [torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8], ids=str)
@pytest.mark.parametrize("name", PROGRAMS)
def test_integer_reductions_keep_their_dtype(name, dtype, backend):
    fn = PROGRAMS[name]
    x = (torch.arange(6).reshape(2, 3) % 3 + 1).to(dtype)
    x_eager = x.clone()
    want = fn(x_eager)
    x_jit = x.clone()
    got = fusion_alias.jit(fn, backend=backend)(x_jit)
    assert got.dtype == want.dtype
    torch.testing.assert_close(got, want)
    torch.testing.assert_close(x_jit, x_eager)
