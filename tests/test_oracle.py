"""The reference backend catches a wrong partition: with hazards ignored, f, h and k go wrong."""

import pytest
import torch

from helpers import run_both
from programs import f, h, k, aliased_inputs


@pytest.mark.parametrize("schedule", ["reads-first", "writes-first"])
@pytest.mark.parametrize("fn", [f, h, k], ids=["f", "h", "k"])
def test_ignoring_hazards_gives_wrong_results(fn, schedule):
    jitted, got, expected, sj, se = run_both(
        fn, aliased_inputs, backend="reference", schedule=schedule, unsafe_ignore_hazards=True
    )
    same = all(torch.allclose(g, e) for g, e in zip(got, expected)) and torch.allclose(sj[0], se[0])
    assert not same, "the oracle did not notice a partition that ignores alias hazards"
