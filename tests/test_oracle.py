"""The reference backend catches a wrong partition: with hazards ignored, programs whose regions
must be cut go wrong.

Seeds f, h and k no longer serve: ``base_updates`` makes each of them write one base with its
final value, read before the write only where the kernel model allows, so even one region of them
gives eager's numbers under every schedule. These keep a hazard whatever the rewrite: a write
through one view (``b``, a view of ``a``), then a read of the other (raw), or a read of the other
first (war).
"""

import pytest
import torch

from helpers import run_both
from programs import aliased_inputs


def read_after_write(a, b):
    b.tanh_()
    return a * 2


def read_before_write(a, b):
    r = a * 2
    b.tanh_()
    return r + 1


@pytest.mark.parametrize("schedule", ["reads-first", "writes-first"])
@pytest.mark.parametrize("fn", [read_after_write, read_before_write], ids=["raw", "war"])
def test_ignoring_hazards_gives_wrong_results(fn, schedule):
    if (fn, schedule) == (read_after_write, "writes-first"):
        pytest.skip("writes-first lands the write before the read: a raw hazard ignored still reads right")
    if (fn, schedule) == (read_before_write, "reads-first"):
        pytest.skip("reads-first reads at region entry: a war hazard ignored still reads right")
    jitted, got, expected, sj, se = run_both(
        fn, aliased_inputs, backend="reference", schedule=schedule, unsafe_ignore_hazards=True
    )
    same = all(torch.allclose(g, e) for g, e in zip(got, expected)) and torch.allclose(sj[0], se[0])
    assert not same, "the oracle did not notice a partition that ignores alias hazards"


@pytest.mark.parametrize("fn", [read_after_write, read_before_write], ids=["raw", "war"])
def test_hazards_kept_give_eager_results(fn):
    for schedule in ("reads-first", "writes-first"):
        jitted, got, expected, sj, se = run_both(fn, aliased_inputs, backend="reference", schedule=schedule)
        assert all(torch.allclose(g, e) for g, e in zip(got, expected)) and torch.allclose(sj[0], se[0])
