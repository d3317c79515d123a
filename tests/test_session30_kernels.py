"""Session 30: ops eager has no kernel for at their operands' dtypes are refused by name, as eager refuses
them; those it has kernels for run as eager runs them (eager_kernels.py)."""

import pytest
import torch
import torch.nn.functional as F

import fusion_alias
from fusion_alias import eager_kernels

OPS = {
    "silu": lambda a: F.silu(a) * 1,
    "silu_inplace": lambda a: F.silu(a, inplace=True) * 1,
    "gelu": lambda a: F.gelu(a) + 0,
    "gelu_tanh": lambda a: F.gelu(a, approximate="tanh") + 0,
    "softplus": lambda a: F.softplus(a) + 0,
    "elu_": lambda a: F.elu_(a) * 1,
    "celu": lambda a: F.celu(a) * 1,
    "selu_inplace": lambda a: F.selu(a, inplace=True) * 1,
    "leaky_relu": lambda a: F.leaky_relu(a, 0.1) * 1,
    "logsigmoid": lambda a: F.logsigmoid(a) * 1,
    "mish": lambda a: F.mish(a) * 1,
    "hardsigmoid_inplace": lambda a: F.hardsigmoid(a, inplace=True) * 1,
    "relu6_inplace": lambda a: F.relu6(a, inplace=True) * 1,
    "tanhshrink": lambda a: F.tanhshrink(a) * 1,
    # ops eager has kernels for at these dtypes: they run
    "relu": lambda a: F.relu(a) * 1,
    "abs_neg": lambda a: a.abs().neg() if a.dtype is not torch.bool else a.abs(),
    "exp_of_ints": lambda a: a.exp() * 1,
    "sum_as_float64": lambda a: a.sum(dtype=torch.float64),
    "where_of_a_mask": lambda a: torch.where(a > 0, a, a * 2),
}
DTYPES = [torch.bool, torch.uint8, torch.int64, torch.float16, torch.bfloat16, torch.complex64]


def _outcome(fn, dtype):
    x = torch.tensor([[-1.5, 0.0, 2.0], [3.0, -0.5, 1.0]])
    x = (x > 0) if dtype is torch.bool else x.to(dtype)
    try:
        out = fn(x)
    except Exception as e:  # noqa: BLE001 - compared with the other run's outcome
        return e
    return out.clone(), x.clone()


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("name", OPS)
def test_ops_with_and_without_a_kernel_as_eager(name, dtype):
    fn = OPS[name]
    want = _outcome(fn, dtype)
    got = _outcome(fusion_alias.jit(fn, backend="reference"), dtype)
    if isinstance(want, Exception):
        if isinstance(got, Exception) and "fusion_alias" not in str(got):
            return  # (the op ran on torch outside regions: eager's own error)
        assert isinstance(got, Exception), f"eager raised {want!r}; fusion_alias returned {got}"
        assert "rejects this too" in str(got), got
        return
    assert not isinstance(got, Exception), got
    for g, w in zip(got, want):
        assert g.dtype == w.dtype
        torch.testing.assert_close(g, w, atol=2e-2, rtol=2e-2)


def test_each_op_and_dtype_is_asked_of_eager_once():
    fn = lambda a: F.silu(a) * 1  # noqa: E731
    before = len(eager_kernels._VERDICTS)
    for _ in range(2):
        with pytest.raises(NotImplementedError, match="silu.*not implemented for 'Int'"):
            fusion_alias.jit(fn, backend="reference")(torch.arange(6, dtype=torch.int32).reshape(2, 3))
    assert len(eager_kernels._VERDICTS) <= before + 2  # (silu's verdict, and mul's at most, kept)


def test_a_bigger_result_and_a_random_draw_are_not_asked():
    """``repeat`` makes more elements than its operand (the small run must stay small), and a draw
    would move torch's generator: neither is run by eager at compile time."""
    asked = []
    real = eager_kernels._ask_eager
    eager_kernels._ask_eager = lambda b: asked.append(b.sym.name) or real(b)
    try:
        fn = lambda a: (a.repeat(2, 2) + 1, torch.bernoulli(a.float().sigmoid()))  # noqa: E731
        torch.manual_seed(0)
        want = fn(torch.ones(2, 3, dtype=torch.int32))
        torch.manual_seed(0)
        got = fusion_alias.jit(fn, backend="reference")(torch.ones(2, 3, dtype=torch.int32))
    finally:
        eager_kernels._ask_eager = real
    assert "repeat" not in asked and "bernoulli" not in asked, asked
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w)


@pytest.mark.parametrize("dtype", [torch.int64, torch.bool, torch.complex64, torch.float16], ids=str)
def test_an_op_with_a_shape_rule_is_asked_at_its_own_small_shape(dtype):
    """``F.glu`` halves a dimension that must be even: a one-element stand-in never reached eager's
    dtype dispatch, and glu of integers ran fused where eager has no kernel."""
    fn = lambda a: F.glu(a, 1) * 1  # noqa: E731
    x = torch.ones(2, 4).to(dtype)
    if dtype is torch.float16:
        torch.testing.assert_close(fusion_alias.jit(fn, backend="reference")(x.clone()), fn(x.clone()))
        return
    with pytest.raises(NotImplementedError, match="glu"):
        fn(x.clone())  # (eager)
    with pytest.raises(NotImplementedError, match="glu.*not implemented for.*rejects this too"):
        fusion_alias.jit(fn, backend="reference")(x)
