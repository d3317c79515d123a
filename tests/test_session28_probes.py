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


_DTYPE_BRANCHES = {
    "eq": lambda a: a * 2 if a.dtype == torch.float32 else a * 3,
    "ne": lambda a: a * 2 if a.dtype != torch.bool else a * 3,
    "is": lambda a: a * 2 if a.dtype is torch.float32 else a * 3,
    "in": lambda a: a * 2 if a.dtype in (torch.float16, torch.float32) else a * 3,
    "dict": lambda a: a * {torch.float32: 2, torch.int32: 5}.get(a.dtype, 3),
    "finfo": lambda a: a * (torch.finfo(a.dtype).bits if a.dtype.is_floating_point else 1),
    "zeros_like_dtype": lambda a: a + torch.zeros(a.shape, dtype=a.dtype),
}


@pytest.mark.parametrize("dtype", [torch.float32, torch.int32, torch.bool], ids=str)
@pytest.mark.parametrize("name", sorted(_DTYPE_BRANCHES))
def test_dtype_comparisons_answer_as_eager(name, dtype):
    """Note [a tensor's dtype is a torch.dtype]: ``x.dtype`` read by the program is a ``torch.dtype``."""
    fn = _DTYPE_BRANCHES[name]
    if dtype is torch.bool and name in ("dict", "finfo", "eq", "is", "in", "ne"):
        fn = {"ne": fn}.get(name, lambda a: a & (a.dtype == torch.bool))
    jitted = fusion_alias.jit(fn)
    for _ in range(2):
        x = torch.ones(4, dtype=dtype)
        want, got = fn(x.clone()), jitted(x.clone())
        assert got.dtype == want.dtype
        torch.testing.assert_close(got, want)


@pytest.mark.parametrize(
    "op",
    [torch.floor, torch.ceil, torch.round, torch.trunc, lambda a: a.floor(), lambda a: torch.flip(a, ()), lambda a: a.flip([])],
    ids=["floor", "ceil", "round", "trunc", "method", "flip", "flip_method"],
)
def test_results_thunder_returned_as_their_input_are_new_tensors(op):
    """Note [results Thunder returns as their input] (fuzz seed 20830 #127): a later write into the
    input does not show in the result."""

    def fn(a):
        r = op(a)
        a.zero_()
        return r

    jitted = fusion_alias.jit(fn)
    for _ in range(2):
        x = torch.arange(1, 7, dtype=torch.int32)
        x1, x2 = x.clone(), x.clone()
        want, got = fn(x1), jitted(x2)
        torch.testing.assert_close(got, want)
        torch.testing.assert_close(x2, x1)


def _write_a_row_of_an_expanded_input(h):
    h[3:].mul_(2.0)
    return h * 1


def test_write_into_a_view_of_an_input_whose_elements_overlap_is_refused():
    """Note [a write into a view of an input whose elements overlap] (fuzz seed 20830 #45): eager's write
    shows in every row of ``h``; fusion_alias returned three rows unchanged. Now refused, by name; the same
    program with the expand inside the function runs."""
    from fusion_alias.errors import AliasInputError

    x = torch.arange(16.0).reshape(4, 4)
    with pytest.raises(AliasInputError, match="elements overlap each other"):
        fusion_alias.jit(_write_a_row_of_an_expanded_input)(x[1].expand(4, 4))

    def expanded_inside(row):
        return _write_a_row_of_an_expanded_input(row.expand(4, 4))

    x1, x2 = torch.arange(16.0).reshape(4, 4), torch.arange(16.0).reshape(4, 4)
    torch.testing.assert_close(fusion_alias.jit(expanded_inside)(x2[1]), expanded_inside(x1[1]))
    torch.testing.assert_close(x2, x1)
