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
            sum((o * torch.arange(1.0, 17.0).reshape(4, 4)).sum() for o in out if o.requires_grad).backward()
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


GRAD_MODES_LEFT = {
    "off": _off, "off_after_a_write": _off_after_a_write, "on": _on, "off_then_on": _off_then_on,
    "write_with_gradients_off_then_on": _write_with_gradients_off_then_on,
    "off_by_autograd_module": _off_by_autograd_module, "restored": _restored, "block": _block,
}


@pytest.mark.parametrize("grad", [False, True])
@pytest.mark.parametrize("grad_mode", [True, False])
@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("name", GRAD_MODES_LEFT)
def test_a_cached_call_leaves_the_grad_mode_eager_leaves(name, schedule, grad_mode, grad):
    fn = GRAD_MODES_LEFT[name]
    try:
        want = _run(fn, grad, grad_mode)
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
