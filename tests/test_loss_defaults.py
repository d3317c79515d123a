"""``F.nll_loss`` with eager's signature and ``ignore_index=-100`` (loss_defaults.py, Note [nll_loss's ignore_index]):
Thunder 0.2.6 failed on ``F.nll_loss(logp, target)`` without an explicit ``ignore_index``."""

import pytest
import torch
import torch.nn.functional as F

import fusion_alias

from grad_helpers import assert_matches_eager

_WEIGHT = [1.0, 2.0, 0.5, 1.0]


@pytest.mark.parametrize(
    "fn",
    [
        lambda w, t: F.nll_loss(w.log_softmax(-1), t),  # the padding target -100 ignored, as eager
        lambda w, t: F.nll_loss(w.log_softmax(-1), t, reduction="none"),
        lambda w, t: F.nll_loss(w.log_softmax(-1), t, torch.tensor(_WEIGHT)),  # weight positional
        lambda w, t: F.nll_loss(w.log_softmax(-1), t, reduction="sum"),
        lambda w, t: F.nll_loss(w.log_softmax(-1), t, weight=torch.tensor(_WEIGHT), reduction="sum"),
        lambda w, t: F.nll_loss(w.log_softmax(-1), t.clamp_min(0), ignore_index=3),
    ],
    ids=["mean", "none", "weight-positional", "sum", "weight-sum", "ignore-index"],
)
def test_nll_loss_matches_eager(fn):
    def make_inputs():
        w = torch.arange(12.0).reshape(3, 4).sin().requires_grad_()
        return [w], [w, torch.tensor([0, -100, 2])]

    assert_matches_eager(fn, make_inputs)


def test_nll_loss_deprecated_arguments_are_refused_by_name():
    def f(w, t):
        return F.nll_loss(w.log_softmax(-1), t, size_average=False)

    with pytest.raises(NotImplementedError, match="deprecated size_average"):
        fusion_alias.jit(f, backend="reference")(torch.randn(3, 4), torch.tensor([0, 1, 2]))
