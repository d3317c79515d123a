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


@pytest.mark.parametrize("flag", ["is_conj", "is_neg", "is_inference", "is_shared", "has_names"])
def test_flags_answered_at_trace_time_are_refused(flag):
    # inplace_lookasides.py, Note [flags answered at trace time]: Thunder answered False for every call
    def f(x):
        return x * 2 if getattr(x, flag)() else x

    with pytest.raises(NotImplementedError, match=f"Tensor.{flag}"):
        fusion_alias.jit(f, backend="reference")(torch.ones(2))


@pytest.mark.parametrize("name", ["dropout1d", "dropout2d", "dropout3d", "alpha_dropout", "feature_alpha_dropout"])
def test_feature_dropout_in_place_writes_its_input(name):
    # inplace_lookasides.py, _feature_dropout: x was left unchanged under Thunder
    drop = getattr(torch.nn.functional, name)

    def f(x):
        y = drop(x, 0.5, True, True)
        return x + y, y * 1

    for schedule in SCHEDULES:
        results = []
        for run in (f, fusion_alias.jit(f, backend="reference", schedule=schedule)):
            torch.manual_seed(0)
            x = torch.ones(2, 4, 3, 3) if name.endswith("3d") else torch.ones(2, 4, 3)
            out = run(x)
            results.append((*out, x))
        for got, want in zip(results[1], results[0]):
            torch.testing.assert_close(got, want)


def test_inference_mode_inside_the_function_is_refused():
    # inplace_lookasides.py, _inference_mode_enter: the block's results carried gradients (w.grad 3, eager's 1)
    def f(w):
        with torch.inference_mode():
            t = w * 2
        return t + w

    with pytest.raises(NotImplementedError, match="inference_mode"):
        fusion_alias.jit(f, backend="reference")(torch.ones(3, requires_grad=True))
    with torch.inference_mode():  # around the call: runs
        torch.testing.assert_close(fusion_alias.jit(lambda w: w * 2 + w, backend="reference")(torch.ones(3)),
                                   torch.full((3,), 3.0))
