"""Session 43: ``x.sgn()`` with gradients. Thunder's backward takes its gradient from torch's autograd (a vjp
fallback), which hands the backward a ZeroTensor for a real ``x``; the reference backend asked that tensor for its
storage and raised "Attempted to access the data pointer on an invalid python storage" in every backward through
``sgn`` (lowering.assemble_outputs; plain ``thunder.jit`` runs it). And ``sgn`` saves its input and its result for the
backward, as eager's ``SgnBackward0`` does (refusals/saved_versions.py's table): a write after it was a missed
rejection. Checked against eager on fresh inputs, every reference schedule, first and cached call.
"""

import pytest
import torch

import fusion_alias
from tests.grad_helpers import assert_matches_eager


def times_itself(x):
    return x.sgn() * x


def of_a_written(x):
    x.mul_(2)
    return torch.sgn(x) * x + x.sgn().sum()


def sgn_in_place(x):
    t = x * 1
    t.sgn_()
    return t * x


def _inputs():
    leaf = torch.tensor([1.5, -2.0, 0.0, 3.0, -0.5, 0.25], requires_grad=True)
    return [leaf], [leaf * 1]


@pytest.mark.parametrize("fn", [times_itself, of_a_written, sgn_in_place], ids=lambda f: f.__name__)
def test_matches_eager(fn):
    assert_matches_eager(fn, _inputs)


@pytest.mark.parametrize("result", [False, True], ids=["input_written", "result_written"])
def test_a_write_into_what_sgn_saved_is_refused_as_eager_raises(result):
    def prog(x):
        y = x.sgn()
        (y if result else x).mul_(2)
        return y * 1 + x

    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        sum(o.sum() for o in [prog(_inputs()[1][0])]).backward()
    with pytest.raises(fusion_alias.AliasInputError, match="sgn saves"):
        fusion_alias.jit(prog, backend="reference")(*_inputs()[1])
