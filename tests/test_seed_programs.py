"""Every seed program: eager's outputs and mutated inputs, every reference schedule, first and cached call."""

import pytest
import thunder

from helpers import assert_same, region_count, run_both
from programs import SEED_PROGRAMS

from fusion_alias.backends.reference import SCHEDULES


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("fn,make_inputs,max_regions", SEED_PROGRAMS, ids=[p[0].__name__ for p in SEED_PROGRAMS])
def test_seed_program(fn, make_inputs, max_regions, schedule):
    jitted, got, expected, sj, se = run_both(fn, make_inputs, backend="reference", schedule=schedule)
    assert_same(got, expected, sj, se)
    assert 1 <= region_count(jitted) <= max_regions

    # second call: served from the cache, on fresh inputs, still right
    hits = thunder.cache_hits(jitted)
    _, got, expected, sj, se = run_both(fn, make_inputs, seed=1, jitted=jitted)
    assert_same(got, expected, sj, se)
    assert thunder.cache_hits(jitted) == hits + 1


def test_region_counts_are_exact():
    """The counts we reach today (regressions would show here first)."""
    counts = {}
    for fn, make_inputs, _ in SEED_PROGRAMS:
        jitted, *_ = run_both(fn, make_inputs, backend="reference")
        counts[fn.__name__] = region_count(jitted)
    assert counts == {
        "f": 2,
        "g": 1,
        "h": 2,
        "k": 2,
        "scalar_view_then_exp": 2,
        "view_exp_tanh": 1,
        "two_views": 1,
        "write_then_add": 2,
        "tanh_pow4": 1,
        "independent": 1,
    }


def test_results_keep_memory():
    """The copy_ result of a region is the destination buffer itself (seed k's second repro)."""
    import torch
    import fusion_alias

    def fn(a):
        return a.exp_()

    x = torch.randn(3)
    out = fusion_alias.jit(fn)(x)
    assert out.data_ptr() == x.data_ptr()
