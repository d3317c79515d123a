"""Session 42 (helper-69): ``torch.bernoulli(p)`` with an element of ``p`` NaN or outside [0, 1] raises, as eager
does (probability_checks.py, Note [bernoulli of a probability outside [0, 1]]).

Thunder traces the draw as ``uniform_like(p) < p``, which takes NaN for 0: the call returned where eager raises
"Expected p_in >= 0 && p_in <= 1" (plain ``thunder.jit`` too). Found beside fuzz ``--special-values --grad`` seed
20962 #22, whose ``torch.bernoulli(torch.sigmoid(b.exp()))`` eager rejects when ``b`` holds NaN. Checked with and
without gradients, in programs that write in place and programs that do not, first and cached call; valid
probabilities still give eager's draws.
"""

import pytest
import torch

import fusion_alias
from fusion_alias.backends.reference import SCHEDULES

NAN = float("nan")


def draw(x):
    return torch.bernoulli(torch.sigmoid(x))


def draw_method(x):
    return (x * 0.5).bernoulli() + x


def draw_then_write(x):
    t = torch.bernoulli(torch.sigmoid(x.exp()))
    x.add_(1)
    return t * x


def draw_of_a_written(x):
    x.mul_(0.25)
    return torch.bernoulli(x)


PROGRAMS = [draw, draw_method, draw_then_write, draw_of_a_written]
BAD = {"nan": [NAN, 0.5, 0.25], "above_one": [0.5, 3.0, 0.25], "below_zero": [0.5, -8.0, 0.25]}
GOOD = [0.5, 0.75, 0.25]


def _call(fn, values, grad):
    leaf = torch.tensor(values, requires_grad=grad)
    torch.manual_seed(0)
    out = fn(leaf * 1)
    if out.requires_grad:
        out.sum().backward()
    return out.detach(), leaf.grad


@pytest.mark.parametrize("grad", [False, True], ids=["no_grad", "grad"])
@pytest.mark.parametrize("bad", sorted(BAD))
@pytest.mark.parametrize("fn", PROGRAMS, ids=lambda f: f.__name__)
def test_raises_where_eager_raises(fn, bad, grad):
    try:
        _call(fn, BAD[bad], grad)
    except RuntimeError as e:
        assert "p_in" in str(e)
    else:
        pytest.skip("eager runs (the operand maps into [0, 1])")
    jitted = fusion_alias.jit(fn, backend="reference")
    for _ in range(2):
        with pytest.raises(RuntimeError, match=r"probabilities must be in \[0, 1\]"):
            _call(jitted, BAD[bad], grad)


@pytest.mark.parametrize("grad", [False, True], ids=["no_grad", "grad"])
@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("fn", PROGRAMS, ids=lambda f: f.__name__)
def test_valid_probabilities_draw_as_eager(fn, schedule, grad):
    want = _call(fn, GOOD, grad)
    jitted = fusion_alias.jit(fn, backend="reference", schedule=schedule)
    for _ in range(2):
        got = _call(jitted, GOOD, grad)
        torch.testing.assert_close(got[0], want[0])
        if grad:
            torch.testing.assert_close(got[1], want[1])
