"""Session 27 hand probes: ``x.where(c, y)`` and a default dtype other than float32 (both silently wrong before)."""

import pytest
import torch

import fusion_alias
from fusion_alias.backends.reference import SCHEDULES


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_tensor_where_method_is_where_of_condition_self_other(schedule):
    # inplace_lookasides.py, Note [Tensor.where is where(condition, self, other)]
    def f(x, c, y):
        return x.where(c, torch.ones((), dtype=torch.bool)), y.where(c, 0.5), y.where(y > 0, y * 2)

    x = torch.tensor([True, False, True, False])
    c = torch.tensor([True, True, False, False])
    y = torch.tensor([-1.0, 2.0, 3.0, -4.0])
    for got, want in zip(fusion_alias.jit(f, backend="reference", schedule=schedule)(x, c, y), f(x, c, y)):
        torch.testing.assert_close(got, want, rtol=0, atol=0)


def test_a_default_dtype_other_than_float32_is_refused():
    # errors.py, Note [a default dtype other than float32]: Thunder's trace is float32 where eager's is float64
    def f(x):
        return x * 1.5

    jitted = fusion_alias.jit(f, backend="reference")
    x = torch.ones(2, dtype=torch.int32)
    assert jitted(x).dtype == torch.float32  # compiled under the default float32
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        assert f(x).dtype == torch.float64
        with pytest.raises(NotImplementedError, match="default dtype is torch.float64"):
            jitted(x)  # the cached program is not reused either
    finally:
        torch.set_default_dtype(previous)
    assert jitted(x).dtype == torch.float32
