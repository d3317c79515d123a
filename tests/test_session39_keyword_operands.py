"""Session 39 (helper): eager's keyword names for the operands of more of Thunder's positional-only symbols
(``torch.matmul(x, other=y)``, ``x.matmul(other=y)``, ``torch.ldexp(x, other=y)``, ``x.bmm(mat2=y)``,
``torch.exp(input=x)``, ``torch.sum(input=x, dim=0)``, ...) raised Thunder's TypeError, in plain ``thunder.jit`` and
here, where eager runs them (eager_keywords.py, Note [eager's keyword names for operands]). Each case writes its
first argument after the op, and is compared with eager on fresh inputs, the written input too, under both reference
schedules; the spelling eager refuses is refused with eager's TypeError.
"""

import pytest
import thunder
import torch

import fusion_alias

SCHEDULES = ["reads-first", "writes-first"]


CASES = {
    "torch.matmul(x, other=y)": lambda x, y: torch.matmul(x, other=y),
    "torch.matmul(input=x, other=y)": lambda x, y: torch.matmul(input=x, other=y),
    "x.matmul(other=y)": lambda x, y: x.matmul(other=y),
    "torch.ldexp(x, other=n)": lambda x, y: torch.ldexp(x, other=y.round()),
    "x.ldexp(other=n)": lambda x, y: x.ldexp(other=y.round()),
    "torch.bmm(input=, mat2=)": lambda x, y: torch.bmm(input=x[None], mat2=y[None])[0],
    "x.bmm(mat2=)": lambda x, y: x[None].bmm(mat2=y[None])[0],
    "torch.outer(x, vec2=)": lambda x, y: torch.outer(x[0], vec2=y[1]),
    "x.outer(vec2=)": lambda x, y: x[0].outer(vec2=y[1]),
    "torch.lerp(input=, end=, weight=)": lambda x, y: torch.lerp(input=x, end=y, weight=0.25),
    "torch.masked_fill(input=, mask=, value=)": lambda x, y: torch.masked_fill(input=x, mask=y > 0, value=1.5),
    "torch.clamp(input=, min=)": lambda x, y: torch.clamp(input=x, min=y),
    "torch.exp(input=)": lambda x, y: torch.exp(input=x),
    "torch.neg(input=)": lambda x, y: torch.neg(input=x),
    "torch.abs(input=)": lambda x, y: torch.abs(input=x),
    "torch.sigmoid(input=)": lambda x, y: torch.sigmoid(input=x),
    "torch.tanh(input=)": lambda x, y: torch.tanh(input=x),
    "torch.rsqrt(input=)": lambda x, y: torch.rsqrt(input=x.abs() + 1),
    "torch.reciprocal(input=)": lambda x, y: torch.reciprocal(input=x.abs() + 1),
    "torch.sign(input=)": lambda x, y: torch.sign(input=x),
    "torch.erf(input=)": lambda x, y: torch.erf(input=x),
    "torch.square(input=)": lambda x, y: torch.square(input=x),
    "torch.relu(input=)": lambda x, y: torch.relu(input=x),
    "torch.floor(input=)": lambda x, y: torch.floor(input=x),
    "torch.log1p(input=)": lambda x, y: torch.log1p(input=x.abs()),
    "torch.clone(input=)": lambda x, y: torch.clone(input=x),
    "torch.logical_not(input=)": lambda x, y: torch.logical_not(input=x > 0).to(x.dtype),
    "torch.isnan(input=)": lambda x, y: torch.isnan(input=x).to(x.dtype),
    "torch.sum(input=, dim=)": lambda x, y: torch.sum(input=x, dim=0),
    "torch.mean(input=)": lambda x, y: torch.mean(input=x),
    "torch.prod(input=, dim=)": lambda x, y: torch.prod(input=x, dim=1),
    "torch.amax(input=, dim=)": lambda x, y: torch.amax(input=x, dim=0),
    "torch.argmax(input=, dim=)": lambda x, y: torch.argmax(input=x, dim=1).to(x.dtype),
    "torch.cumsum(input=, dim=)": lambda x, y: torch.cumsum(input=x, dim=0),
    "torch.tril(input=, diagonal=)": lambda x, y: torch.tril(input=x, diagonal=0),
    "torch.softmax(input=, dim=)": lambda x, y: torch.softmax(input=x, dim=0),
    "torch.log_softmax(input=, dim=)": lambda x, y: torch.log_softmax(input=x, dim=1),
    "torch.logsumexp(input=, dim=)": lambda x, y: torch.logsumexp(input=x, dim=1),
    "torch.any(input=)": lambda x, y: torch.any(input=x > 0).to(x.dtype),
}


def _program(op):
    def f(x, y):
        r = op(x, y)
        x.mul_(2)  # (a write after the op: the op's operand is read before it)
        return r * 1

    return f


def _inputs():
    g = torch.Generator().manual_seed(0)
    return torch.randn(3, 3, generator=g), torch.randn(3, 3, generator=g)


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("case", list(CASES))
def test_eager_keyword_names(case, schedule):
    f = _program(CASES[case])
    jitted = fusion_alias.jit(f, backend="reference", schedule=schedule)
    for _ in range(2):
        xe, ye = _inputs()
        xj, yj = _inputs()
        torch.testing.assert_close(jitted(xj, yj), f(xe, ye))
        torch.testing.assert_close(xj, xe)
        torch.testing.assert_close(yj, ye)


@pytest.mark.parametrize("call", [lambda x, y: torch.matmul(x, b=y), lambda x, y: torch.exp(x, input=x),
                                  lambda x, y: x.matmul(input=y)])
def test_a_spelling_eager_refuses_is_refused(call):
    x, y = _inputs()
    with pytest.raises(TypeError):
        call(x, y)
    with pytest.raises(TypeError):
        fusion_alias.jit(call, backend="reference")(x, y)


def test_plain_thunder_raises_there():
    with pytest.raises(TypeError):
        thunder.jit(CASES["torch.matmul(x, other=y)"])(*_inputs())


def test_methods_of_one_operand_still_trace_as_methods():
    def f(x):
        return x.exp().neg().abs().sum(0).add_(1)

    x = torch.randn(3, 3)
    torch.testing.assert_close(fusion_alias.jit(f, backend="reference")(x.clone()), f(x.clone()))


def test_out_of_a_function_lent_here_is_still_refused_by_name():
    # (out_arguments.py, Note [out= of other functions]: its refusal wraps Thunder's lookaside, which this one replaces)
    from fusion_alias.errors import OutArgumentError

    def f(x, y, o):
        torch.matmul(x, other=y, out=o)
        return o + 1

    x, y = _inputs()
    f(x, y, torch.empty(3, 3))  # eager runs it
    with pytest.raises(OutArgumentError, match=r"torch\.matmul\(\.\.\., out=o\) is not supported"):
        fusion_alias.jit(f, backend="reference")(x, y, torch.empty(3, 3))


def test_gradients_through_keyword_spellings():
    def f(x, w):
        return torch.exp(input=torch.matmul(x, other=w)).sum(dim=0)

    x, w = _inputs()
    we, wj = w.clone().requires_grad_(), w.clone().requires_grad_()
    out_e, out_j = f(x, we), fusion_alias.jit(f, backend="reference")(x, wj)
    torch.testing.assert_close(out_j, out_e)
    out_e.sum().backward()
    out_j.sum().backward()
    torch.testing.assert_close(wj.grad, we.grad)
