"""Session 30: silently wrong results found by fresh fuzz seeds and hand probes, each against eager PyTorch on
fresh copies of the inputs, on the reference backend under both schedules, first and cached calls."""

import pytest
import torch

import fusion_alias

SCHEDULES = ["reads-first", "writes-first"]


def _inputs(call: int, grad: bool):
    g = torch.Generator().manual_seed(call)
    x_leaf, w_leaf = torch.rand(4, 4, generator=g), torch.rand(4, 4, generator=g)
    if grad:
        x_leaf.requires_grad_(), w_leaf.requires_grad_()
    return (x_leaf * 1 if grad else x_leaf), w_leaf, [x_leaf, w_leaf]


def _run(fn, grad: bool, grad_mode: bool, calls: int = 3):
    """Per call: outputs, the inputs after the call, leaf gradients and the grad mode the call left."""
    seen = []
    for call in range(calls):
        x, w, leaves = _inputs(call, grad)
        with torch.set_grad_enabled(grad_mode):
            torch.set_grad_enabled(grad_mode)  # (a mode the function leaves changed outlives the block)
            out = fn(x, w)
            left = torch.is_grad_enabled()
        out = out if isinstance(out, tuple) else (out,)
        if grad and any(o.requires_grad for o in out):
            sum((o * torch.arange(1.0, o.numel() + 1.0).reshape(o.shape)).sum() for o in out if o.requires_grad).backward()
        seen.append(([o.detach().clone() for o in out], [x.detach().clone(), w.detach().clone()],
                     [leaf.grad for leaf in leaves], left))
    return seen


# Note [a grad mode the function leaves changed] (grad_mode_exit.py): session 30 probe
def _off(x, w):
    torch.set_grad_enabled(False)
    return x * w


def _off_after_a_write(x, w):
    torch.set_grad_enabled(False)
    x.mul_(2)
    return x + w


def _on(x, w):
    torch.set_grad_enabled(True)
    return x * w


def _off_then_on(x, w):
    torch.set_grad_enabled(False)
    y = x.exp()
    torch.set_grad_enabled(True)
    return y * w


def _write_with_gradients_off_then_on(x, w):
    torch.set_grad_enabled(False)
    w.add_(1)
    torch.set_grad_enabled(True)
    return x * w


def _off_by_autograd_module(x, w):
    torch.autograd.set_grad_enabled(False)
    return x * w


def _restored(x, w):
    before = torch.is_grad_enabled()
    torch.set_grad_enabled(False)
    y = x * w
    torch.set_grad_enabled(before)
    return y


def _block(x, w):
    with torch.no_grad():
        x.mul_(3) if not torch.is_grad_enabled() else x.add_(1)
    return x * w


def _a_view_then_off(x, w):  # (an argument's view remade after the call: in the mode it was made in)
    y = x.t()
    torch.set_grad_enabled(False)
    return y, w * 2


def _a_row_written_after_off(x, w):
    a = x[1:]
    torch.set_grad_enabled(False)
    a.add_(1)
    return a, x


def _on_then_a_view_then_off(x, w):
    torch.set_grad_enabled(True)
    y = x.t()
    torch.set_grad_enabled(False)
    return y


GRAD_MODES_LEFT = {
    "off": _off, "off_after_a_write": _off_after_a_write, "on": _on, "off_then_on": _off_then_on,
    "write_with_gradients_off_then_on": _write_with_gradients_off_then_on,
    "off_by_autograd_module": _off_by_autograd_module, "restored": _restored, "block": _block,
    "a_view_then_off": _a_view_then_off, "a_row_written_after_off": _a_row_written_after_off,
    "on_then_a_view_then_off": _on_then_a_view_then_off,
}


@pytest.mark.parametrize("grad", [False, True])
@pytest.mark.parametrize("grad_mode", [True, False])
@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("name", GRAD_MODES_LEFT)
def test_a_cached_call_leaves_the_grad_mode_eager_leaves(name, schedule, grad_mode, grad):
    fn = GRAD_MODES_LEFT[name]
    try:
        try:
            want = _run(fn, grad, grad_mode)
        except RuntimeError:  # eager's backward raises (a view made under no_grad, written): so must the jitted
            with pytest.raises(RuntimeError):
                _run(fusion_alias.jit(fn, backend="reference", schedule=schedule), grad, grad_mode)
            return
        got = _run(fusion_alias.jit(fn, backend="reference", schedule=schedule), grad, grad_mode)
    finally:
        torch.set_grad_enabled(True)
    for (g_out, g_in, g_grads, g_left), (w_out, w_in, w_grads, w_left) in zip(got, want):
        assert g_left is w_left
        for g, w in zip(g_out + g_in, w_out + w_in):
            torch.testing.assert_close(g, w)
        for g, w in zip(g_grads, w_grads):
            if w is None or g is None:  # None as zeros
                assert (w is None or not w.any()) and (g is None or not g.any())
            else:
                torch.testing.assert_close(g, w)


def _grad_inputs(call: int, dtype=torch.float32):
    g = torch.Generator().manual_seed(call)
    x_leaf = torch.rand(4, 4, generator=g).to(dtype).requires_grad_()
    w_leaf = torch.rand(4, 4, generator=g).to(dtype).requires_grad_()
    return x_leaf * 1, w_leaf * 1, [x_leaf, w_leaf]


def _flat(out) -> list:
    if isinstance(out, dict):
        out = list(out.values())
    return [t for o in out for t in _flat(o)] if isinstance(out, (tuple, list)) else [out]


def _run_and_write_outputs(fn, dtype=torch.float32, calls: int = 2):
    """Per call: the outputs and inputs after a loss over the outputs, its backward, and a later in-place write
    into each output (as eager allows it); the leaf gradients; which outputs are one object."""
    seen = []
    for call in range(calls):
        x, w, leaves = _grad_inputs(call, dtype)
        out = _flat(fn(x, w))
        if any(o.requires_grad for o in out):
            sum((o * torch.arange(1.0, o.numel() + 1.0).reshape(o.shape).to(dtype)).sum()
                for o in out if o.requires_grad).backward()
        same = [[a is b for b in out] for a in out]
        for i, o in enumerate(out):
            o.add_(10 * (i + 1))
        seen.append(([o.detach().clone() for o in out], [x.detach().clone(), w.detach().clone()],
                     [leaf.grad for leaf in leaves], same, [w.requires_grad]))
    return seen


def _check_as_eager(fn, schedule, dtype=torch.float32):
    tol = {torch.float16: 1e-2, torch.bfloat16: 4e-2}.get(dtype)
    kw = dict(rtol=tol, atol=tol) if tol else {}
    want = _run_and_write_outputs(fn, dtype)
    got = _run_and_write_outputs(fusion_alias.jit(fn, backend="reference", schedule=schedule), dtype)
    for (g_out, g_in, g_grads, g_same, g_rg), (w_out, w_in, w_grads, w_same, w_rg) in zip(got, want):
        assert g_same == w_same and g_rg == w_rg
        for g, w in zip(g_out + g_in, w_out + w_in):
            torch.testing.assert_close(g, w, **kw)
        for g, w in zip(g_grads, w_grads):
            if w is None or g is None:  # None as zeros
                assert (w is None or not w.any()) and (g is None or not g.any())
            else:
                torch.testing.assert_close(g, w, **kw)


# Note [outputs that are one tensor in eager] (same_object_outputs.py): session 30 probe
ONE_TENSOR_IN_EAGER = {
    "written_then_itself": lambda x, w: (lambda y: (y.exp_(), y))(x + w),
    "itself_then_written": lambda x, w: (lambda y: (y, y.exp_()))(x + w),
    "a_chain_of_writes": lambda x, w: (lambda y: (y.add_(1).mul_(2), y))(x + w),
    "in_a_nested_structure": lambda x, w: (lambda y: (y.exp_(), [y, {"k": y}]))(x + w),
    "a_conversion_that_returns_itself": lambda x, w: (lambda y: (y.exp_().float(), y))(x + w),
    "a_lookaside_inplace_op": lambda x, w: (lambda y: (y.sigmoid_(), y))(x + w),
    "a_setitem_then_a_write": lambda x, w: (lambda y: (y.__setitem__(0, 2.0), y, y.exp_())[1:])(x + w),
    "a_detached_tensor_written": lambda x, w: (lambda d: (d.exp_(), d))((x + w).detach()),
    "an_inplace_activation": lambda x, w: (lambda y: (torch.nn.functional.relu(y, inplace=True), y))(x - w),
}

# ... and the converse: an input's own tensor (or a view of it) returned where eager's output is other memory
NOT_THE_CALLERS_TENSOR = {
    "copy_returned": lambda x, w: (lambda y: y.copy_(w))(x + w),
    "copy_returned_and_itself": lambda x, w: (lambda y: (y.copy_(w), y))(x + w),
    "a_row_after_a_copy": lambda x, w: (lambda y: (y.copy_(w), y[0])[1])(x + w),
    "a_transpose_after_a_copy": lambda x, w: (lambda y: (y.copy_(w), y.t())[1])(x + w),
    "copy_of_a_transpose": lambda x, w: (lambda y: y.copy_(w.t()))(x + w),
    "copy_of_a_detached_input": lambda x, w: (lambda y: y.copy_(w.detach()))(x + w),
    "setitem_of_the_whole": lambda x, w: (lambda y: (y.__setitem__(slice(None), w), y)[1])(x + w),
    "two_copies_of_one_input": lambda x, w: (lambda y, z: (y.copy_(w), z.copy_(w)))(x + 1, x + 2),
}


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("name", sorted({**ONE_TENSOR_IN_EAGER, **NOT_THE_CALLERS_TENSOR}))
def test_outputs_written_after_a_training_call_alias_as_in_eager(name, schedule):
    _check_as_eager({**ONE_TENSOR_IN_EAGER, **NOT_THE_CALLERS_TENSOR}[name], schedule)


def test_a_copy_returned_does_not_make_the_callers_input_require_grad():
    def f(x, w):
        return (x + w).copy_(w)

    x_leaf, w = torch.ones(2, 2, requires_grad=True), torch.zeros(2, 2)
    out = fusion_alias.jit(f, backend="reference")(x_leaf * 1, w)
    assert out is not w and not w.requires_grad  # (it was w itself, marked as requiring grad)


# no_grad_writes.kept_path (was functional_rewrite._keep_identity): fuzz seed 31040 #97 (dtype, --grad), a write under no_grad of a 16-bit tensor
def _mul_under_no_grad(x, w):
    with torch.no_grad():
        x.mul_(2)
    return x.exp()


def _setitem_under_no_grad(x, w):
    t = x + w  # (saves nothing: eager's backward runs)
    with torch.no_grad():
        x[0] = 1.5
    return t, x * 3


NO_GRAD_WRITES = {"mul_": _mul_under_no_grad, "setitem": _setitem_under_no_grad}


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("name", NO_GRAD_WRITES)
def test_a_no_grad_write_of_a_16_bit_tensor_in_a_training_call(name, schedule, dtype):
    _check_as_eager(NO_GRAD_WRITES[name], schedule, dtype)


# refusals/returned_diagonals.py, Note [a returned diagonal is a copy in a training call]: session 30 probe
RETURNED_DIAGONALS = {
    "of_an_input": lambda x, w: x.diagonal(),
    "of_an_input_beside_it": lambda x, w: (x, x.diagonal()),
    "of_a_transposed_input": lambda x, w: x.t().diagonal(),
    "a_view_of_it": lambda x, w: x.diagonal()[1:],
    "of_an_output": lambda x, w: (lambda y: (y, y.diagonal(1)))(x * w),
    "of_an_output_by_torch_diagonal": lambda x, w: (lambda y: (y, torch.diagonal(y, 0, 0, 1)))(x * w),
    "of_an_input_beside_a_write": lambda x, w: (w.add_(1), x.diagonal())[1],
}


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("name", RETURNED_DIAGONALS)
def test_a_returned_diagonal_of_memory_the_caller_holds_is_refused_with_gradients(name, schedule):
    fn = RETURNED_DIAGONALS[name]
    want = _run_and_write_outputs(fn)  # eager runs it (the write reaches the memory the diagonal views)
    assert want
    with pytest.raises(fusion_alias.AliasInputError, match=r"diagonal\(\)"):
        _run_and_write_outputs(fusion_alias.jit(fn, backend="reference", schedule=schedule))


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_a_diagonal_nothing_else_holds_still_runs_with_gradients(schedule):
    _check_as_eager(lambda x, w: ((x * w).diagonal(), x.diagonal().sum()), schedule)


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("name", RETURNED_DIAGONALS)
def test_a_returned_diagonal_without_gradients_is_eagers_view(name, schedule):
    fn = RETURNED_DIAGONALS[name]
    results = []
    for jitted in (fn, fusion_alias.jit(fn, backend="reference", schedule=schedule)):
        x, w = torch.arange(16.0).reshape(4, 4), torch.ones(4, 4)
        out = _flat(jitted(x, w))
        for i, o in enumerate(out):
            o.add_(10 * (i + 1))
        results.append([o.clone() for o in out] + [x, w])
    for g, w in zip(*results[::-1]):
        torch.testing.assert_close(g, w)


# tensor_identity.py, Note [a function that writes its first argument]: fuzz seed 24007 #51 (autocast) and neighbours
WRITES_ITS_FIRST_ARGUMENT = {
    "relu_": lambda t: t.relu_(),
    "F.relu": lambda t: torch.nn.functional.relu(t, inplace=True),
    "F.hardtanh": lambda t: torch.nn.functional.hardtanh(t, inplace=True),
    "F.leaky_relu": lambda t: torch.nn.functional.leaky_relu(t, 0.1, inplace=True),
    "F.elu": lambda t: torch.nn.functional.elu(t, inplace=True),
    "F.relu6": lambda t: torch.nn.functional.relu6(t, inplace=True),
    "F.silu": lambda t: torch.nn.functional.silu(t, inplace=True),
    "F.threshold": lambda t: torch.nn.functional.threshold(t, 0.5, 0.0, inplace=True),
    "F.hardsigmoid": lambda t: torch.nn.functional.hardsigmoid(t, inplace=True),
    "F.mish": lambda t: torch.nn.functional.mish(t, inplace=True),
}


@pytest.mark.parametrize("grad", [False, True])
@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("name", WRITES_ITS_FIRST_ARGUMENT)
def test_a_function_that_writes_its_first_argument_returns_it(name, schedule, grad):
    op = WRITES_ITS_FIRST_ARGUMENT[name]

    def f(b, c):
        t0 = c * 1
        t2 = op(t0)
        return b * (-1.0 if t2 is t0 else 1.0), b * (-1.0 if id(t2) == id(t0) else 1.0), t2 * 2

    results = []
    for fn in (f, fusion_alias.jit(f, backend="reference", schedule=schedule)):
        c_leaf = torch.linspace(-1.0, 1.0, 6).requires_grad_(grad)
        out = fn(torch.ones(3), c_leaf * 1)
        if grad:
            out[2].sum().backward()
        results.append([o.detach() for o in out] + ([c_leaf.grad] if grad else []))
    for g, w in zip(*results[::-1]):
        torch.testing.assert_close(g, w)
