"""A call whose inputs alias differently never runs the program compiled for another aliasing."""

import torch

import fusion_alias
from helpers import assert_same, region_count, run_both
from programs import f, aliased_inputs, independent_inputs


def test_aliased_then_independent_then_aliased():
    jitted = fusion_alias.jit(f, backend="reference")
    seen = []
    for i, make in enumerate([aliased_inputs, independent_inputs, aliased_inputs, independent_inputs]):
        _, got, expected, sj, se = run_both(f, make, seed=i, jitted=jitted)
        assert_same(got, expected, sj, se)
        seen.append(region_count(jitted))
    assert seen == [2, 1, 2, 1]
    assert jitted.compiled_structures == 2


def test_non_overlapping_views_of_one_storage_are_independent():
    def fn(a, b):
        a.mul_(2)
        return b * 3

    x = torch.randn(4, 6)
    x2 = x.clone()
    jitted = fusion_alias.jit(fn)
    out = jitted(x[:, ::2], x[:, 1::2])
    torch.testing.assert_close(out, fn(x2[:, ::2], x2[:, 1::2]))
    torch.testing.assert_close(x, x2)
    assert region_count(jitted) == 1

    # the same program with overlapping views is cut, and right
    y = torch.randn(4, 6)
    y2 = y.clone()
    out = jitted(y[:, :3], y[:, 1:4])
    torch.testing.assert_close(out, fn(y2[:, :3], y2[:, 1:4]))
    torch.testing.assert_close(y, y2)
    assert region_count(jitted) == 2
