"""Tests for fusion_alias.overlap: exact input overlap analysis."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fusion_alias.components import overlap_components, overlap_groups
from fusion_alias.overlap import DEFAULT_MAX_WORK, _solve, may_overlap, overlap_detail

# ---------------------------------------------------------------------------
# Random strided views of one buffer.

BUF_BYTES = 512
# dtypes that numpy understands (so ``.numpy()`` works and shares memory).
DTYPES = [torch.uint8, torch.int8, torch.int16, torch.float32, torch.int32, torch.float64, torch.int64]


@st.composite
def views(draw, buf: torch.Tensor, tight: bool = False):
    dtype = draw(st.sampled_from(DTYPES))
    flat = buf.view(dtype)
    n = flat.numel()
    ndim = draw(st.integers(0, 3))
    # sizes 0..4, with 0 (an empty view) about one time in twenty per dimension
    size = st.integers(0, 19).map(lambda v: 0 if v == 0 else 1 + v % 4)
    sizes = draw(st.lists(size, min_size=ndim, max_size=ndim))
    stride = st.integers(0, 6) if tight else st.one_of(st.integers(0, 3), st.integers(0, 24))
    strides = draw(st.lists(stride, min_size=ndim, max_size=ndim))
    span = sum((s - 1) * t for s, t in zip(sizes, strides)) if 0 not in sizes else 0
    top = max(0, n - 1 - span)
    # Mostly small offsets so that views of one buffer actually interleave.
    small = st.integers(0, min(top, 12))
    offset = draw(small if tight else st.one_of(small, st.integers(0, top)))
    if span + offset >= n:  # too large for the buffer: fall back to a 0-d view
        sizes, strides = [], []
    return torch.as_strided(flat, sizes, strides, offset)


def numpy_shares(a: torch.Tensor, b: torch.Tensor) -> bool:
    return bool(np.shares_memory(a.numpy(), b.numpy(), max_work=None))


def describe(t: torch.Tensor) -> str:
    return f"{t.dtype} size={tuple(t.shape)} stride={t.stride()} offset={t.storage_offset()}"


BUF = torch.zeros(BUF_BYTES, dtype=torch.uint8)

HYP = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@HYP
@given(views(BUF), views(BUF))
def test_matches_numpy_exact(a, b):
    v = overlap_detail(a, b)
    ref = numpy_shares(a, b)
    # Never a false negative.
    assert not (ref and not v.overlap), f"false negative: {describe(a)} vs {describe(b)}"
    # No false positive while the solver stayed within the cap.
    if v.exact:
        assert v.overlap == ref, f"{v}: {describe(a)} vs {describe(b)}"
    # Symmetric, and the public API agrees.
    assert may_overlap(b, a) == v.overlap == may_overlap(a, b)


@HYP
@given(views(BUF, tight=True), views(BUF, tight=True))
def test_matches_numpy_interleaved(a, b):
    """Small strides and offsets: the views interleave and the solver works."""
    v = overlap_detail(a, b)
    ref = numpy_shares(a, b)
    assert v.overlap or not ref, f"false negative: {describe(a)} vs {describe(b)}"
    if v.exact:
        assert v.overlap == ref, f"{v}: {describe(a)} vs {describe(b)}"


@HYP
@given(views(BUF), views(BUF))
def test_unbounded_is_exact(a, b):
    v = overlap_detail(a, b, max_work=None)
    assert v.exact
    assert v.overlap == numpy_shares(a, b), f"{describe(a)} vs {describe(b)}"


def _components_of(ts, overlaps):
    """Canonical component labels (each tensor labelled by its component's lowest index) of the
    relation ``overlaps`` over ``ts``: what ``overlap_components`` must return."""
    n = len(ts)
    parent = list(range(n))

    def find(x):
        while parent[x] != x:
            x = parent[x]
        return x

    for i in range(n):
        for j in range(i + 1, n):
            if overlaps(ts[i], ts[j]):
                ri, rj = find(i), find(j)
                parent[max(ri, rj)] = min(ri, rj)
    return tuple(find(i) for i in range(n))


@HYP
@given(st.lists(views(BUF), min_size=1, max_size=6))
def test_components_match_pairwise(ts):
    """overlap_components == connected components of the pairwise relation."""
    expected = _components_of(ts, may_overlap)
    assert overlap_components(ts) == expected
    # Same structure on a fresh buffer (different addresses) => same labels.
    other = torch.zeros(BUF_BYTES, dtype=torch.uint8)
    moved = [torch.as_strided(other.view(t.dtype), t.shape, t.stride(), t.storage_offset()) for t in ts]
    assert overlap_components(moved) == expected


# ---------------------------------------------------------------------------
# Plain unit tests.


def test_interleaved_columns_do_not_overlap():
    x = torch.zeros(4, 6)
    a, b = x[:, ::2], x[:, 1::2]
    v = overlap_detail(a, b)
    assert v == (False, True, "gcd", 0)  # byte ranges overlap, exact solve says no
    assert not may_overlap(a, b)
    assert may_overlap(a, x) and may_overlap(b, x)
    assert not np.shares_memory(a.numpy(), b.numpy())


def test_element_and_whole():
    x = torch.zeros(4, 6)
    assert may_overlap(x, x[0, 0])
    assert may_overlap(x[3, 5], x)
    assert not may_overlap(x[0, 1], x[0, 0])
    assert may_overlap(x, x)
    assert not may_overlap(x[0], x[1])


def test_expanded_views():
    y = torch.zeros(5)
    e = y.expand(3, 5)  # zero stride
    assert e.stride() == (0, 1)
    assert may_overlap(e, y)
    assert may_overlap(y[2:3].expand(4, 7), y[2])
    assert not may_overlap(y[2:3].expand(4, 7), y[3:])
    assert may_overlap(y[None].expand(2, 5), y[4])


def test_different_storages():
    assert not may_overlap(torch.zeros(3), torch.zeros(3))
    a = torch.zeros(10)
    assert not may_overlap(a, a.clone())
    assert overlap_detail(torch.zeros(3), torch.zeros(3)).stage in ("storage", "extent")


def test_distinct_storage_objects_over_shared_memory():
    # Two storage objects wrapping overlapping memory: addresses decide.
    arr = np.zeros(10)
    a, b = torch.from_numpy(arr), torch.from_numpy(arr[1:])
    assert a.untyped_storage().data_ptr() != b.untyped_storage().data_ptr()
    assert may_overlap(a, b)
    assert not may_overlap(torch.from_numpy(arr[:5]), torch.from_numpy(arr[5:]))
    assert overlap_components([a, b]) == (0, 0)


def test_empty_and_zero_dim():
    x = torch.zeros(4, 6)
    assert not may_overlap(x[:, 0:0], x)
    assert not may_overlap(x[:0], x[:0])
    z = torch.tensor(1.0)
    assert z.dim() == 0
    assert may_overlap(z, z)
    assert may_overlap(x[1, 2], x.view(-1)[8])
    assert not may_overlap(x[1, 2], x.view(-1)[9])


def test_size_one_dims_with_any_stride():
    x = torch.zeros(16)
    a = torch.as_strided(x, (1, 4, 1), (1000, 2, 77), 0)
    b = torch.as_strided(x, (1, 4), (5, 2), 1)
    assert not may_overlap(a, b)
    assert may_overlap(a, torch.as_strided(x, (1, 2), (9, 3), 3))  # x[3], x[6]


def test_mixed_dtypes_bytes():
    x = torch.zeros(8, dtype=torch.int32)
    h = x.view(torch.int16)  # 16 halves
    assert may_overlap(h[1], x[0])  # upper half of x[0]
    assert not may_overlap(h[2], x[0])
    assert may_overlap(h[2::2], x[1:])
    assert not may_overlap(h[2:4], x[0])
    assert not may_overlap(x.view(torch.uint8)[4:8], x[0]) and may_overlap(x.view(torch.uint8)[3:8], x[0])
    d = torch.zeros(4, dtype=torch.float64)
    f = d.view(torch.float32)
    assert may_overlap(f[1::2], d) and not may_overlap(f[1::2], d[2:2])


def test_transposed_and_dense_rung():
    x = torch.zeros(3, 4)
    v = overlap_detail(x.t(), x[1:])
    assert v.overlap and v.stage == "dense"


def test_cap_is_conservative():
    # A problem that needs search: with no budget the answer must be True.
    x = torch.zeros(4096)
    a = torch.as_strided(x, (7, 9, 5), (37, 11, 100), 0)
    b = torch.as_strided(x, (6, 8, 4), (41, 13, 97), 5)
    exact = overlap_detail(a, b, max_work=None)
    assert exact.exact and exact.stage == "solve" and exact.work > 0
    capped = overlap_detail(a, b, max_work=0)
    assert capped.overlap and not capped.exact and capped.stage == "cap"
    assert exact.overlap == np.shares_memory(a.numpy(), b.numpy(), max_work=None)
    assert 0 < DEFAULT_MAX_WORK


def test_solver_small():
    assert _solve([], 0, 0, None)[0] is True
    assert _solve([], 1, 3, None)[0] is False
    assert _solve([(8, 22)], 89, 95, None)[0] is False
    assert _solve([(8, 22)], 89, 96, None)[0] is True
    # 6x + 10y + 15z = 1 has no non-negative solution but 31 = 6 + 10 + 15 has.
    assert _solve([(6, 5), (10, 5), (15, 5)], 1, 1, None)[0] is False
    assert _solve([(6, 5), (10, 5), (15, 5)], 31, 31, None)[0] is True
    assert _solve([(6, 5), (10, 5), (15, 5)], 7, 8, None)[0] is False


def test_components_example():
    x = torch.zeros(4, 6)
    y = torch.zeros(5)
    ts = (x, x[0, 0], y, 3, x[:, ::2])
    assert overlap_components(ts) == (0, 0, 2, -1, 0)
    assert overlap_groups(ts) == [[0, 1, 4]]
    # Interleaved halves are separate components unless something joins them.
    assert overlap_components([x[:, ::2], x[:, 1::2], "s", y]) == (0, 1, -1, 3)
    assert overlap_components([x[:, ::2], x[:, 1::2], x[0]]) == (0, 0, 0)
    assert overlap_groups([x[:, ::2], x[:, 1::2]]) == []
    assert overlap_components([]) == ()
    assert overlap_components([None, 1.0]) == (-1, -1)
    assert overlap_components([x[:0], x[:0]]) == (0, 1)


def test_components_cache_guard_stability():
    x1, x2 = torch.zeros(8, 8), torch.zeros(8, 8)
    k1 = overlap_components([x1[:, ::2], x1[:, 1::2], x1[0, 1]])
    k2 = overlap_components([x2[:, ::2], x2[:, 1::2], x2[0, 1]])
    assert k1 == k2 == (0, 1, 1)
    assert overlap_components([x1[:, ::2], x1[:, 1::2], x1[0, 0]]) == (0, 1, 0)


class _Sub(torch.Tensor):
    pass


def test_conservative_for_uninspectable():
    x = torch.zeros(6)
    s = x.as_subclass(_Sub)
    assert may_overlap(s, x)
    assert may_overlap(s, torch.zeros(2))  # cannot prove different storages
    assert not overlap_detail(s, x).exact
    m1, m2 = torch.zeros(3, device="meta"), torch.zeros(3, device="meta")
    assert may_overlap(m1, m2)
    assert not may_overlap(m1, x)  # different devices
    sp = torch.zeros(3, 3).to_sparse()
    assert may_overlap(sp, torch.zeros(2)) is True
    assert overlap_components([s, torch.zeros(2), m1, 1, x[:0]]) == (0, 0, 2, -1, 4)


def test_parameter_is_inspectable():
    p = torch.nn.Parameter(torch.zeros(4, 4))
    assert not may_overlap(p, torch.zeros(4))
    assert may_overlap(p, p.data[1])
    assert overlap_detail(p, p.data[1]).exact


def test_type_error():
    with pytest.raises(TypeError):
        may_overlap(torch.zeros(1), 3)  # type: ignore[arg-type]


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_nested_tensor_consistency():
    nt = torch.nested.nested_tensor([torch.zeros(2, 3), torch.zeros(4, 3)])
    other = torch.zeros(5)
    assert may_overlap(nt, nt)
    labels = overlap_components([nt, other, nt])
    assert labels[0] == labels[2] == 0
    assert (labels[1] == 0) == may_overlap(nt, other)


def test_large_elements_and_wide_windows():
    # A contiguous block against a sparse strided view: wide window search.
    x = torch.zeros(1 << 16)
    comb = torch.as_strided(x, (50, 40), (1000, 7), 3)
    for lo, hi in [(0, 3), (3, 4), (290, 1000), (1000, 1003), (1281, 1283), (50000, 60000)]:
        block = x[lo:hi]
        ref = bool(np.shares_memory(block.numpy(), comb.numpy(), max_work=None))
        v = overlap_detail(block, comb)
        assert v.exact and v.overlap == ref, (lo, hi, v)
        assert v.work < 100
    c128 = x[:256].view(torch.complex128)  # 16-byte elements over the floats
    assert may_overlap(c128[5], x[:256][21::32])  # bytes 80..96 hold x[20:24]
    assert not may_overlap(c128[5], x[:256][24::32])
    assert may_overlap(c128[5:], x[:256][23::32])


# ---------------------------------------------------------------------------
# Many views sharing a few layouts (the grouped path of _cluster_labels).


def _numpy_components(ts):
    arrays = {id(t): t.numpy() for t in ts}

    def shares(a, b):
        return bool(a.numel() and b.numel() and np.shares_memory(arrays[id(a)], arrays[id(b)], max_work=None))

    return _components_of(ts, shares)


def _layout_views(rng, buf, n_layouts, per_layout):
    """``rng``: a random.Random."""
    out = []
    for _ in range(n_layouts):
        dtype = rng.choice(DTYPES)
        flat = buf.view(dtype)
        n = flat.numel()
        nd = rng.randint(0, 3)
        sizes = [rng.randint(1, 5) for _ in range(nd)]
        strides = [rng.choice((0, 1, 2, 3, rng.randint(1, 12), rng.randint(1, 40))) for _ in range(nd)]
        span = sum((s - 1) * t for s, t in zip(sizes, strides))
        if span >= n:
            sizes, strides, span = [], [], 0
        step = rng.choice((1, 1, 2, 3, rng.randint(1, 8)))
        start = rng.randint(0, 8)
        for k in range(per_layout):
            off = start + k * step if rng.random() < 0.7 else rng.randint(0, n - 1 - span)
            if off + span < n:
                out.append(torch.as_strided(flat, sizes, strides, off))
    rng.shuffle(out)
    return out


def test_components_of_many_views_with_shared_layouts_match_numpy():
    import random

    from fusion_alias.components import clear_cache

    rng = random.Random(1234)
    buf = torch.zeros(1024, dtype=torch.uint8)
    checked = 0
    for _ in range(150):
        ts = _layout_views(rng, buf, rng.randint(1, 3), rng.randint(2, 24))
        if len(ts) < 2:
            continue
        clear_cache()
        assert overlap_components(ts) == _numpy_components(ts), [describe(t) for t in ts]
        checked += 1
    assert checked > 100


def test_interleaved_columns_cold_is_fast():
    import time

    from fusion_alias.components import clear_cache

    base = torch.zeros(16, 1024)
    ts = [base[:, k] for k in range(1024)] + [base[3]]
    best = float("inf")
    for _ in range(3):
        clear_cache()
        t0 = time.perf_counter()
        labels = overlap_components(ts)
        best = min(best, time.perf_counter() - t0)
    assert labels == (0,) * 1025
    assert best < 0.25  # ~5 ms on an idle machine; the old pairwise sweep took ~0.6 s without the row
