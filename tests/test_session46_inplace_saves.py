"""Session 46 probe and sweep: in-place forms whose backward saves their result (``F.celu(x, inplace=True)``,
``F.selu(x, inplace=True)``, ``F.rrelu_`` in eval, ``x.sgn_()``, ``x.copysign_(-1.0)``, ``x.expm1_()``), then a write into that result.
Eager raises at backward ("modified by an inplace operation"); fusion_alias returned gradients (a missed rejection:
refusals/saved_versions.py had no entry for them; tests/test_saved_versions.py re-derives each in eager); and in-place
forms that save their tensor operand (``y.fmod_(z)``, ``y.xlogy_(z)``, ...), then a write into the operand. Without
gradients the same programs run, as eager's, on every reference schedule."""

import pytest
import torch
import torch.nn.functional as F

import fusion_alias
from fusion_alias.errors import AliasInputError

SCHEDULES = ["reads-first", "writes-first", "reverse-writes"]

OPS = {
    "celu_": lambda y: F.celu(y, inplace=True),
    "selu_": lambda y: F.selu(y, inplace=True),
    "rrelu_": lambda y: F.rrelu_(y, training=False),
    "sgn_": lambda y: y.sgn_(),
    "copysign_": lambda y: y.copysign_(-1.0),
    "expm1_": lambda y: y.expm1_(),
}


def _program(op):
    def f(x):
        y = x * 1
        v = op(y)
        v.mul_(2)
        return y * 1, v * 1
    return f


def _input(grad):
    return (torch.arange(16.0).reshape(4, 4) / 7 - 1).requires_grad_(grad)


@pytest.mark.parametrize("name", list(OPS))
def test_refused_with_gradients_where_eager_raises_at_backward(name):
    f = _program(OPS[name])
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        sum(o.sum() for o in f(_input(True))).backward()
    with pytest.raises(AliasInputError, match=name):
        fusion_alias.jit(f, backend="reference")(_input(True))


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("name", list(OPS))
def test_runs_as_eager_without_gradients(name, schedule):
    f = _program(OPS[name])
    want = f(_input(False))
    got = fusion_alias.jit(f, backend="reference", schedule=schedule)(_input(False))
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w)


# in-place forms that save their tensor operand (the session 46 sweep over torch.Tensor's in-place methods), then a
# write into that operand: eager raises at backward; fusion_alias returned gradients
OPERAND_OPS = ["arctan2_", "clamp_max_", "clamp_min_", "clip_", "fmod_", "remainder_", "true_divide_", "xlogy_"]


def _operand_program(name):
    def f(x):
        y = x * 1
        z = x * 0.5 + 0.3
        getattr(y, name)(z)
        z.mul_(2)
        return y * 1
    return f


@pytest.mark.parametrize("name", OPERAND_OPS)
def test_operand_written_after_refused_with_gradients(name):
    f = _operand_program(name)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        f(_input(True)).sum().backward()
    with pytest.raises(AliasInputError):
        fusion_alias.jit(f, backend="reference")(_input(True))


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("name", OPERAND_OPS)
def test_operand_program_runs_as_eager_without_gradients(name, schedule):
    f = _operand_program(name)
    torch.testing.assert_close(fusion_alias.jit(f, backend="reference", schedule=schedule)(_input(False)),
                               f(_input(False)), equal_nan=True)  # (xlogy_ of a negative operand: NaN in both)


# out-of-place methods (the session 46 sweep of torch.Tensor's methods): ``inverse`` saves its result, ``pinverse``
# its result and input, ``arctan2`` (``atan2``) both operands, ``ldexp`` both when the exponent requires grad,
# ``copysign`` of a scalar its input and result, ``xlogy`` of a scalar its input; a write into one after the call
LINALG = {
    "inverse, result written": lambda y: (lambda r: (r.mul_(2), r)[1])(y.inverse()),
    "pinverse, result written": lambda y: (lambda r: (r.mul_(2), r)[1])(y.pinverse()),
    "pinverse, input written": lambda y: (lambda r: (y.mul_(2), r)[1])(y.pinverse()),
    # binary ops the sweep found under other spellings, or with a scalar operand
    "arctan2, input written": lambda y: (lambda r: (y.mul_(2), r)[1])(y.arctan2(y.t() * 0.5 + 0.3)),
    "ldexp, operand written": lambda y: (lambda z: (lambda r: (z.mul_(2), r)[1])(y.ldexp(z)))(y * 0.5 + 0.3),
    "copysign of a scalar, result written": lambda y: (lambda r: (r.mul_(2), r)[1])(y.copysign(0.5)),
    "xlogy of a scalar, input written": lambda y: (lambda r: (y.mul_(2), r)[1])(y.xlogy(0.5)),
}


def _square(grad):
    return (torch.eye(4) * 2 + torch.arange(16.0).reshape(4, 4) / 20).requires_grad_(grad)


def _refused_with_gradients_and_runs_without(case_fn):
    """Eager raises at backward; fusion_alias refuses with gradients, and gives eager's value without."""
    def f(x):
        return case_fn(x * 1) * 1

    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        f(_square(True)).sum().backward()
    with pytest.raises(AliasInputError):
        fusion_alias.jit(f, backend="reference")(_square(True))
    torch.testing.assert_close(fusion_alias.jit(f, backend="reference")(_square(False)), f(_square(False)))


@pytest.mark.parametrize("case", list(LINALG))
def test_linalg_saves_refused_with_gradients(case):
    _refused_with_gradients_and_runs_without(LINALG[case])


# functions of one tensor whose result (and for some, input) eager saves (the session 46 sweep of torch.nn.functional,
# torch.special and torch.linalg): a write into the result after the call
FUNCTIONS = {
    "F.softmin": lambda y: F.softmin(y, 1), "special.i1": torch.special.i1, "special.ndtri": lambda y: torch.special.ndtri(y.sigmoid()),
    "linalg.inv": torch.linalg.inv, "linalg.det": torch.linalg.det, "linalg.matrix_norm": torch.linalg.matrix_norm,
    "linalg.cholesky": lambda y: torch.linalg.cholesky(y @ y.mT + 1), "linalg.svdvals": torch.linalg.svdvals,
}


@pytest.mark.parametrize("case", list(FUNCTIONS))
def test_function_result_written_refused_with_gradients(case):
    _refused_with_gradients_and_runs_without(lambda y: FUNCTIONS[case](y).mul_(2))


# the second sweep (tests/test_session46_inplace_sweep.py over F, special, linalg): a pooled input written after the
# pool, or the result of ``torch.special.softmax`` or ``tensorinv`` written
MORE = {
    "F.avg_pool1d, input written": lambda y: (lambda r: (y.mul_(2), r)[1])(F.avg_pool1d(y, 1)),
    "F.max_pool1d, input written": lambda y: (lambda r: (y.mul_(2), r)[1])(F.max_pool1d(y, 2)),
    "special.softmax, result written": lambda y: (lambda r: (r.mul_(2), r)[1])(torch.special.softmax(y, 1)),
    "linalg.tensorinv, result written": lambda y: (lambda r: (r.mul_(2), r)[1])(torch.linalg.tensorinv(y, 1)),
}


@pytest.mark.parametrize("case", list(MORE))
def test_second_sweep_refused_with_gradients(case):
    _refused_with_gradients_and_runs_without(MORE[case])


# functions with several results: each result eager saves is named "out", "out1", ... in saved_table.py
SEVERAL = {
    "linalg.eigh, eigenvectors written": lambda y: (lambda r: (r[1].mul_(2), r[0] + r[1].sum())[1])(torch.linalg.eigh(y)),
    "linalg.svd, Vh written": lambda y: (lambda r: (r[2].mul_(2), r[1] * 1)[1])(torch.linalg.svd(y)),
    "linalg.qr, R written": lambda y: (lambda r: (r[1].mul_(2), r[0] * 1)[1])(torch.linalg.qr(y)),
    "std_mean, input written": lambda y: (lambda r: (y.mul_(2), r[0] * 1)[1])(torch.std_mean(y, -1)),
}


@pytest.mark.parametrize("case", list(SEVERAL))
def test_several_results_refused_with_gradients(case):
    _refused_with_gradients_and_runs_without(SEVERAL[case])
