"""Session 41 (helper-68): a write after an op into a tensor eager's autograd saved for it, then read by the
backward, raises in eager ("modified by an inplace operation"); fusion_alias returned a gradient (session 40's
sweep of missed rejections: gather, std, hypot, copysign, lerp with a tensor weight, mse_loss, normalize, outer,
cross, median, cummax, logcumsumexp, renorm, ``2 ** x``, softsign, ``x.max()``). Each is an entry of
refusals/saved_versions.py's table now (re-derived in eager by test_saved_versions.py's
``test_the_table_matches_eager``); here each program is checked end to end on the reference schedules, and the
neighbours eager runs (a reduction over a dim, a number weight, copysign's sign operand) still run, with eager's
values and gradients.
"""

import pytest
import torch
import torch.nn.functional as F

import fusion_alias
from fusion_alias import AliasInputError
from tests.grad_helpers import assert_matches_eager

SCHEDULES = ["reads-first", "writes-first"]
IDX = torch.tensor([[0, 1, 0], [1, 1, 0], [2, 0, 1]])

OPS = {
    "gather": (lambda x: torch.gather(x, 1, IDX), 1), "std": (lambda x: x.std(-1), 1),
    "std_all": (lambda x: x.std(), 1),
    "normalize": (lambda x: F.normalize(x, dim=-1), 1), "median": (lambda x: x.median(), 1),
    "nanmedian": (lambda x: x.nanmedian(), 1), "cummax": (lambda x: x.cummax(-1).values, 1),
    "cummin": (lambda x: x.cummin(0)[0], 1), "max": (lambda x: x.max(), 1),
    "max_of_two": (lambda x, y: torch.max(x, y), 2),
    "lerp": (lambda a, b, w: torch.lerp(a, b, w), 3), "renorm": (lambda x: x.renorm(2, 0, 1.0), 1),
    "rpow": (lambda x: 2 ** x, 1), "softsign": (F.softsign, 1), "outer": (lambda a, b: torch.outer(a[0], b[0]), 2),
    "ger": (lambda a, b: torch.ger(a[0], b[0]), 2), "cross": (lambda a, b: torch.cross(a[:, :3], b[:, :3], dim=-1), 2),
    "mse_loss": (F.mse_loss, 2), "hypot": (torch.hypot, 2), "copysign": (torch.copysign, 2),
    "logcumsumexp": (lambda x: x.logcumsumexp(-1), 1),
}
OPS.update({  # (the neighbours a second sweep found: ``a / b`` traces as true_divide, which the table lacked)
    "true_divide": (lambda a, b: a / b, 2), "var_mean": (lambda x: torch.var_mean(x, -1)[0], 1),
    "softshrink": (F.softshrink, 1), "hardshrink": (F.hardshrink, 1), "logit": (lambda x: torch.logit(x, eps=1e-3), 1),
    "xlogy": (torch.xlogy, 2), "i0": (torch.i0, 1), "polygamma": (lambda x: torch.polygamma(1, x), 1),
    "clamp_min_tensor": (lambda a, b: a.clamp(min=b), 2), "clamp_max_tensor": (lambda a, b: a.clamp(max=b), 2),
    "clip": (lambda a, b, c: a.clip(b, c), 3), "prelu": (lambda a, b: F.prelu(a, b[0, :1]), 2), "glu": (F.glu, 1),
    "asinh": (torch.asinh, 1), "logaddexp": (torch.logaddexp, 2), "logaddexp2": (torch.logaddexp2, 2),
    "addmm": (lambda a, b: torch.addmm(a[:, :3], a, b.t()[:, :3]), 2),
    "threshold": (lambda x: F.threshold(x, 0.1, 0.0), 1),
    "rrelu_eval": (lambda x: F.rrelu(x, training=False), 1), "fmod": (lambda a, b: torch.fmod(a, b.abs() + 0.5), 2),
    "remainder": (lambda a, b: torch.remainder(a, b.abs() + 0.5), 2), "exp2": (torch.exp2, 1),
    "vector_norm": (lambda x: torch.linalg.vector_norm(x, dim=-1), 1), "angle": (torch.angle, 1),
    "local_response_norm": (lambda x: F.local_response_norm(x[None], 2), 1),
})
# (op, written operand) pairs eager runs: the op saves nothing of that operand that its backward reads
RUNS = {("median_dim", 0), ("median_dim_kw", 0), ("max_dim", 0), ("lerp_number", 0), ("lerp_number", 1),
        ("copysign", 1), ("nanmedian_dim", 0), ("exp2", 0)}
OPS.update({
    "median_dim": (lambda x: x.median(-1).values, 1), "median_dim_kw": (lambda x: x.median(dim=-1).values, 1),
    "nanmedian_dim": (lambda x: x.nanmedian(-1)[0], 1), "max_dim": (lambda x: x.max(-1).values, 1),
    "lerp_number": (lambda a, b: torch.lerp(a, b, 0.3), 2),
})
CASES = [(name, i) for name, (_, n) in OPS.items() for i in range(n)]


def _program(name, written):
    op, _ = OPS[name]

    def prog(*xs):
        y = op(*xs)
        xs[written].add_(1.0)
        return y

    prog.__name__ = f"{name}_then_write_{written}"
    return prog


def _make(n):
    def make():
        leaves = [(torch.arange(12.0).reshape(3, 4) * (0.3 + 0.1 * i) - 1.7 + i).requires_grad_() for i in range(n)]
        return leaves, tuple(w * 1 for w in leaves)

    return make


@pytest.mark.parametrize("name,written", CASES, ids=[f"{n}-{i}" for n, i in CASES])
@pytest.mark.parametrize("schedule", SCHEDULES)
def test_eagers_verdict(name, written, schedule):
    prog, make = _program(name, written), _make(OPS[name][1])
    if (name, written) in RUNS:
        assert_matches_eager(prog, make)
        return
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        prog(*make()[1]).sum().backward()
    with pytest.raises(AliasInputError, match="modified|saved|backward"):
        fusion_alias.jit(prog, backend="reference", schedule=schedule)(*make()[1])


INPLACE = {  # (the in-place forms: ``t = x * 1``, the op into ``t``, then a write of ``t`` or of the operand ``y``)
    "exp2_": lambda t, y: t.exp2_(), "tan_": lambda t, y: t.tan_(), "hypot_": lambda t, y: t.hypot_(y),
    "pow_": lambda t, y: t.abs_().add_(0.5).pow_(y), "clamp_": lambda t, y: t.clamp_(min=y),
    "atan2_": lambda t, y: t.atan2_(y), "copysign_": lambda t, y: t.copysign_(y), "clip_": lambda t, y: t.clip_(y, y + 1),
    "lerp_": lambda t, y: t.lerp_(y * 2, y.sigmoid()),
}
INPLACE_CASES = [(n, w) for n in INPLACE for w in ("t", "y") if not (w == "y" and n in ("exp2_", "tan_"))]


@pytest.mark.parametrize("name,written", INPLACE_CASES, ids=[f"{n}-{w}" for n, w in INPLACE_CASES])
@pytest.mark.parametrize("schedule", SCHEDULES)
def test_in_place_forms_eagers_verdict(name, written, schedule):
    def prog(x, y):
        t = x * 1
        INPLACE[name](t, y)
        (t if written == "t" else y).add_(1.0)
        return t * 1

    make = _make(2)
    try:
        prog(*make()[1]).sum().backward()
    except RuntimeError as e:
        assert "modified by an inplace operation" in str(e)
        with pytest.raises(AliasInputError):
            fusion_alias.jit(prog, backend="reference", schedule=schedule)(*make()[1])
        return
    assert_matches_eager(prog, make)


@pytest.mark.parametrize("name", ["std", "median", "normalize", "hypot", "lerp"])
def test_without_the_write_eagers_gradients(name):
    op, n = OPS[name]
    assert_matches_eager(op, _make(n))
