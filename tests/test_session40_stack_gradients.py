"""Session 40: ``torch.hstack``, ``vstack``, ``row_stack``, ``dstack`` and ``column_stack`` pass their gradient
(stack_family.py, Note [the stacks' gradient]). Their result did not require grad in a call that computes gradients,
so the gradient through them was dropped, silently (plain ``thunder.jit`` too; helper-67's probe). Each is compared
with eager on fresh leaves, its value and both operands' gradients, over operands of 0 to 3 dimensions, under both
reference schedules; without gradients, and through a write into a stacked operand's base, the values too.
"""

import pytest
import torch

import fusion_alias

SCHEDULES = ["reads-first", "writes-first"]
STACKS = ["hstack", "vstack", "row_stack", "dstack", "column_stack"]
SHAPES = [((3,), (3,)), ((), ()), ((2, 3), (2, 3)), ((2, 3), (2, 1)), ((1, 3), (3,)), ((2, 3, 1), (2, 3, 2))]


def _program(name):
    op = getattr(torch, name)

    def f(a, b):
        return op([a * 1.5, b]) * 2 + 1

    return f


def _eager_accepts(name, sa, sb):
    try:
        getattr(torch, name)([torch.zeros(sa), torch.zeros(sb)])
        return True
    except RuntimeError:
        return False


CASES = [(n, sa, sb) for n in STACKS for sa, sb in SHAPES if _eager_accepts(n, sa, sb)]


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("name, sa, sb", CASES, ids=[f"{n}-{sa}-{sb}" for n, sa, sb in CASES])
def test_stack_value_and_gradient(name, sa, sb, schedule):
    f = _program(name)
    g = torch.Generator().manual_seed(0)
    a0, b0 = torch.randn(sa, generator=g), torch.randn(sb, generator=g)
    weight = None
    grads = []
    for jit in (None, fusion_alias.jit(f, backend="reference", schedule=schedule)):
        a, b = a0.clone().requires_grad_(), b0.clone().requires_grad_()
        out = (jit or f)(a, b)
        assert out.requires_grad
        if weight is None:
            weight = torch.randn(out.shape, generator=g)
        (out * weight).sum().backward()
        grads.append((out.detach(), a.grad, b.grad))
    for got, want in zip(grads[1], grads[0]):
        torch.testing.assert_close(got, want)


@pytest.mark.parametrize("name", STACKS)
def test_stack_of_a_written_base(name):
    """Without gradients: the stack reads the base after a write through a view of it."""
    def f(x):
        x[0].mul_(3)
        return getattr(torch, name)([x[0], x[1]])

    xe, xj = torch.randn(2, 3), None
    xj = xe.clone()
    want = f(xe)
    got = fusion_alias.jit(f, backend="reference")(xj)
    torch.testing.assert_close(got, want)
    torch.testing.assert_close(xj, xe)


def test_tensors_by_name():
    f = lambda a, b: torch.vstack(tensors=[a, b])  # noqa: E731
    a, b = torch.randn(3), torch.randn(3)
    torch.testing.assert_close(fusion_alias.jit(f)(a, b), f(a, b))
