"""Session 38: eager's keyword names for the operands of Thunder's positional-only symbols (eager_keywords.py,
Note [eager's keyword names for operands]). ``x.mul(other=2)``, ``torch.add(input=x, other=y)``,
``x.pow_(exponent=2)``, ``torch.where(condition=m, input=x, other=y)`` and the like, which eager runs, raised
Thunder's TypeError here and in plain ``thunder.jit``; a call eager refuses is refused with eager's TypeError."""

import pytest
import torch

import fusion_alias
from helpers import assert_same, run_both

SCHEDULES = ("reads-first", "writes-first")

BINARY = ("add", "sub", "mul", "div", "true_divide", "remainder", "fmod", "maximum", "minimum", "eq", "ne", "lt",
          "le", "gt", "ge", "atan2", "copysign", "logical_and", "logical_or", "logical_xor", "nextafter")
INPLACE = ("add", "sub", "mul", "div", "true_divide", "remainder", "fmod", "atan2", "copysign", "nextafter")


def _programs():
    out = {}
    for op in BINARY:
        out[f"x.{op}(other=)"] = lambda a, b, op=op: (getattr(a, op)(other=b * 2 + 3) * 1, b * 1)
        out[f"torch.{op}(input=, other=)"] = lambda a, b, op=op: (getattr(torch, op)(input=a + 1, other=b[0]) * 1,)
    for op in INPLACE:
        out[f"x.{op}_(other=)"] = lambda a, b, op=op: (getattr(a, op + "_")(other=b[0] + 3), b * 1)
    out.update({
        "add(other=, alpha=)": lambda a, b: (torch.add(a, other=b, alpha=2), b * 1),
        "add_(other=, alpha=)": lambda a, b: (a.add_(other=b + 0, alpha=-0.5), b * 1),
        "div(other=, rounding_mode=)": lambda a, b: (torch.div(input=a, other=b + 3, rounding_mode="floor"),),
        "pow(exponent=)": lambda a, b: (a.abs().pow(exponent=2) + 0, torch.pow(input=b.abs(), exponent=0.5)),
        "pow_(exponent=)": lambda a, b: (a.pow_(exponent=2), b * 1),
        "where(condition=, input=, other=)": lambda a, b: (torch.where(condition=a > 0, input=a, other=b),),
        "where(cond, input=, other=)": lambda a, b: (torch.where(b > 0, input=b, other=0.0),),
        "addcmul_(tensor1=, tensor2=, value=)": lambda a, b: (a.addcmul_(tensor1=b * 2, tensor2=b + 1, value=0.5), b * 1),
        "addcdiv(tensor1=, tensor2=)": lambda a, b: (torch.addcdiv(a, tensor1=b, tensor2=b.abs() + 1) * 1,),
        "add(input=, other=, out=)": lambda a, b: (torch.add(input=b[1], other=1.0, out=a[0]), a * 1),
    })
    return out


PROGRAMS = _programs()


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("name", list(PROGRAMS))
def test_eagers_operand_keywords_run_as_eager(name, schedule):
    """``a`` and ``b`` are one view of one base, views of two parts of it, or one a copy: the writes land where
    eager's do."""
    fn = PROGRAMS[name]
    for make in (lambda base: (base[1:4, 1:4], base[1:4, 1:4]), lambda base: (base[:3, :3], base[2:, 2:]),
                 lambda base: (base[1:4, 1:4].clone(), base[:3, :3])):
        _, got, want, state_jit, state_eager = run_both(fn, make, backend="reference", schedule=schedule)
        assert_same(got, want, state_jit, state_eager)


REFUSED = {
    "a name eager does not take": lambda a: a.mul(b=2),
    "Thunder's own name": lambda a: torch.add(a, b=a),
    "an operand twice": lambda a: torch.add(a, input=a),
    "a keyword unknown to both": lambda a: a.sub(other=a, beta=2),
    "where's method takes no input=": lambda a: torch.where(a > 0, other=a),
    "pow's other=": lambda a: a.pow(other=2),
}


@pytest.mark.parametrize("name", list(REFUSED))
def test_what_eager_refuses_is_refused(name):
    fn = REFUSED[name]
    x = torch.randn(3, 3)
    with pytest.raises(TypeError):
        fn(x.clone())
    with pytest.raises(TypeError):
        fusion_alias.jit(fn, backend="reference")(x.clone())


def test_gradient_through_keyword_operands():
    x = torch.randn(3, 3, generator=torch.Generator().manual_seed(3))
    w = torch.randn(3, 3, generator=torch.Generator().manual_seed(4))
    fn = lambda t, u: (torch.mul(input=t, other=u).add(other=t, alpha=2).pow(exponent=2)).sum()  # noqa: E731
    te, ue = x.clone().requires_grad_(), w.clone().requires_grad_()
    tj, uj = x.clone().requires_grad_(), w.clone().requires_grad_()
    fn(te, ue).backward()
    fusion_alias.jit(fn, backend="reference")(tj, uj).backward()
    torch.testing.assert_close(tj.grad, te.grad)
    torch.testing.assert_close(uj.grad, ue.grad)
