"""Session 28: trace-time answers that were silently wrong (plain thunder.jit too), each against eager."""

import pytest
import torch

import fusion_alias


def _grad_mode_inside_no_grad(x):
    with torch.no_grad():
        flag = torch.is_grad_enabled()
    return x * 2 if flag else x * 3


def _grad_mode_after_set_grad_enabled(x):
    before = torch.is_grad_enabled()
    torch.set_grad_enabled(False)
    off = torch.is_grad_enabled()
    torch.set_grad_enabled(True)
    on = torch.is_grad_enabled()
    torch.set_grad_enabled(before)  # (a mode left changed after the call is not eager's: docs/limits.md)
    return x * (2 if off else 3) * (5 if on else 7) * (11 if before else 13)


def _grad_mode_nested(x):
    with torch.no_grad():
        with torch.enable_grad():
            inner = torch.is_grad_enabled()
        outer = torch.is_grad_enabled()
    return x * (2 if inner else 3) * (5 if outer else 7)


@pytest.mark.parametrize("fn", [_grad_mode_inside_no_grad, _grad_mode_after_set_grad_enabled, _grad_mode_nested])
@pytest.mark.parametrize("caller_grad", [True, False], ids=["grad", "no_grad"])
def test_is_grad_enabled_reads_the_traced_mode(fn, caller_grad):
    """Note [grad mode read inside the function]."""
    jitted = fusion_alias.jit(fn)
    for _ in range(2):  # compile, then the cached program
        with torch.set_grad_enabled(caller_grad):
            want = fn(torch.ones(3))
            mode_after_eager = torch.is_grad_enabled()  # (set_grad_enabled as a call outlives the function)
        with torch.set_grad_enabled(caller_grad):
            got = jitted(torch.ones(3))
            mode_after_jitted = torch.is_grad_enabled()
        torch.testing.assert_close(got, want)
        assert mode_after_jitted == mode_after_eager


def _by_class(x):
    return x * 2 if isinstance(x, torch.nn.Parameter) else x * 3


class _Marked(torch.Tensor):
    pass


@pytest.mark.parametrize(
    "first,second",
    [
        (lambda: torch.nn.Parameter(torch.ones(3)), lambda: torch.ones(3, requires_grad=True)),
        (lambda: torch.ones(3, requires_grad=True), lambda: torch.nn.Parameter(torch.ones(3))),
        (lambda: torch.ones(3), lambda: torch.nn.Parameter(torch.ones(3), requires_grad=False)),
    ],
    ids=["parameter-then-tensor", "tensor-then-parameter", "frozen-parameter"],
)
def test_cache_keys_an_arguments_tensor_class(first, second):
    """Note [an argument's tensor type]: a program compiled for one class is not reused for another."""
    jitted = fusion_alias.jit(_by_class)
    for make in (first, second, first):
        got, want = jitted(make()), _by_class(make())
        torch.testing.assert_close(got.detach(), want.detach())
    assert jitted.compiled_structures == 2
