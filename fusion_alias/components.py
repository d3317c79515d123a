"""Overlap components of a call's tensors: which of many tensors may share memory.

``overlap_components(tensors)`` labels each tensor by its component of the ``may_overlap`` graph
(exact pairwise answers from ``overlap.py``), deciding many views of one buffer by layout and
offset rather than pairwise (Note [many views of one buffer]). ``overlap_groups`` lists the
components with two or more members; ``shared_storage_groups`` groups by storage, overlapping or not.
"""

from __future__ import annotations

from math import gcd
from operator import itemgetter
from typing import Iterable, Sequence

import torch

from fusion_alias.overlap import (
    DEFAULT_MAX_WORK, _EMPTY, _UNKNOWN, _Parameter, _Tensor, _describe, _merge, _provably_apart, _solve,
    _strided, _strided_description, _terms_of,
)

_CLUSTER_CACHE: dict[tuple, tuple[tuple[int, int], ...]] = {}  # key -> joins
_first = itemgetter(0)
_third = itemgetter(2)

_CLUSTER_CACHE_MAX = 4096


def clear_cache() -> None:
    """Forget cached cluster answers (used by benchmarks to time cold calls)."""
    _CLUSTER_CACHE.clear()


# Note [many views of one buffer]
# -------------------------------
# A cluster is a set of tensors whose byte ranges meet transitively; in the
# worst realistic case all of them do (1024 columns ``base[:, k]`` of one
# ``(16, 1024)`` buffer: every range spans nearly the whole buffer, no two
# columns share a byte). Comparing pairs is quadratic (~0.6 s at 1024).
# Instead, each tensor's byte set is written in a canonical form
#
#     {lo + sum_k c_k x_k + r : 0 <= x_k <= u_k, 0 <= r < w}
#
# (``_merge`` over the stride terms plus the element's own bytes as a term
# ``(1, itemsize - 1)``: ``w`` is the widest dense run, the ``(c_k, u_k)`` are
# the terms left with ``c_k > w``), and tensors with the same form (the
# *layout*: ``w`` and the terms) differ only by ``lo``. Within one layout the
# offsets decide, without a pairwise search:
#
# * no term left (a dense run of ``w`` bytes): two members overlap iff their
#   ``lo`` differ by less than ``w``; sorted by ``lo``, it is enough to compare
#   neighbours (equal widths);
# * terms left, ``g`` their gcd (``g > w``... or not): every byte of a member
#   is ``lo + g*j + r``, ``r < w``. Members whose ``lo mod g`` are at least
#   ``w`` apart (cyclically) never share a byte. The columns above: ``g`` is
#   4096 bytes, ``w`` is 4, the ``lo`` are 0, 4, 8, ...: 1024 residue classes
#   of one member each, no pair to compare.
#   With a single term ``(c, u)``, members of one residue class overlap iff
#   their ``lo`` differ by at most ``c*u``: again neighbours in ``lo`` order.
#
# What is left (several terms in one residue class, residues closer than
# ``w``, pairs across layouts) is compared pairwise, exactly, along a sweep by
# ``lo``, skipping pairs already in one component and memoising by the two
# layouts and the offset difference.


def _layout_of(desc, memo: dict) -> tuple:
    """``(w, terms)`` of a description: see Note [many views of one buffer]."""
    key = (desc[4], desc[5], desc[6])
    got = memo.get(key)
    if got is None:
        isz = desc[4]
        terms = _terms_of(desc)
        if isz > 1:
            terms.append((1, isz - 1))
        merged = _merge(terms)
        w = 1
        rest = []
        for c, u in merged:
            if c == 1:
                w = u + 1
            else:
                rest.append((c, u))
        got = memo[key] = (w, tuple(sorted(rest, reverse=True)))
    return got


def _layouts_overlap(la: int, a: tuple, lb: int, b: tuple, max_work: int | None) -> bool:
    """Exact (or capped => True) test for two canonical byte sets ``lo + layout``."""
    wa, ta = a
    wb, tb = b
    if not ta and len(tb) <= 1 or not tb and len(ta) <= 1:
        # a dense run against runs of one stride: is some run of one inside the other's extent?
        if ta:
            la, wa, ta, lb, wb, tb = lb, wb, tb, la, wa, ta
        c, u = tb[0] if tb else (1, 0)
        xmin = max(0, (la - wb - lb) // c + 1)
        xmax = min(u, -((lb - la - wa) // c) - 1)
        return xmin <= xmax
    L = lb - la + sum(c * u for c, u in tb) - (wa - 1)
    U = L + (wa - 1) + (wb - 1)
    ans, _, _ = _solve(list(ta) + list(tb), L, U, max_work)
    return True if ans is None else ans


def _cluster_labels(descs: list, max_work: int | None) -> tuple[int, ...]:
    """Local component labels for a cluster of inspectable, non-empty tensors
    given in sequence order (label = position of the component's first member).

    See Note [many views of one buffer]: O(m log m) when the tensors share few
    layouts and those decide by offsets; pairwise (exact) otherwise.
    """
    m = len(descs)
    parent = list(range(m))

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    def union(x: int, y: int) -> None:
        rx, ry = find(x), find(y)
        if rx < ry:
            parent[ry] = rx
        elif ry < rx:
            parent[rx] = ry

    memo_layout: dict = {}
    lows = [d[1] for d in descs]
    highs = [d[2] for d in descs]
    layouts = [_layout_of(d, memo_layout) for d in descs]
    groups: dict[tuple, list[int]] = {}
    for k in range(m):
        groups.setdefault(layouts[k], []).append(k)
    lay_id = {lay: n for n, lay in enumerate(groups)}
    lid = [lay_id[lay] for lay in layouts]  # small ints: cheap memo keys

    # 1. within a layout: decide by offsets where the layout allows it
    pairwise: dict[tuple, list[list[int]]] = {}  # layout -> classes whose pairs are compared one by one
    for lay, members in groups.items():
        if len(members) < 2:
            continue
        w, terms = lay
        if not terms:
            members.sort(key=lows.__getitem__)
            for prev, k in zip(members, members[1:]):
                if lows[k] - lows[prev] < w:
                    union(prev, k)
            continue
        g = 0
        for c, _ in terms:
            g = gcd(g, c)
        classes: dict[int, list[int]] = {}
        for k in members:
            classes.setdefault(lows[k] % g, []).append(k)
        residues = sorted(classes)
        near = w > g or any(b - a < w for a, b in zip(residues, residues[1:]))
        near = near or (len(residues) > 1 and residues[0] + g - residues[-1] < w)
        if near:  # residues closer than an element: compare within the whole layout
            pairwise[lay] = [members]
            continue
        if len(terms) == 1:
            span = terms[0][0] * terms[0][1]
            for cls in classes.values():
                cls.sort(key=lows.__getitem__)
                for prev, k in zip(cls, cls[1:]):
                    if lows[k] - lows[prev] <= span:
                        union(prev, k)
        else:
            pairwise[lay] = [cls for cls in classes.values() if len(cls) > 1]

    # 2. what offsets alone do not decide: a sweep by lowest byte, one active list per
    # tag; a tensor is compared with the active tensors of other tags, and with those
    # of its own class where step 1 left the class pairwise.
    if len(groups) == 1 and not pairwise:
        return tuple(find(k) for k in range(m))
    tag: list = [None] * m
    for lay, members in groups.items():
        for k in members:
            tag[k] = "dense" if not lay[1] else lay  # dense runs of any width: one tag
    own: dict[int, int] = {}  # k -> its pairwise class (compared inside)
    for lay, classes in pairwise.items():
        for n, cls in enumerate(classes):
            for k in cls:
                own[k] = n
    memo: dict[tuple, bool] = {}
    active: dict[object, list[int]] = {}
    dense_top = -1  # the dense member reaching highest so far (dense ones settle by extents)
    for k in sorted(range(m), key=lows.__getitem__):
        lo = lows[k]
        tk = tag[k]
        if tk == "dense":
            if dense_top >= 0 and highs[dense_top] > lo:
                union(dense_top, k)
            if dense_top < 0 or highs[k] > highs[dense_top]:
                dense_top = k
        for t, lst in active.items():
            if t == tk and (tk == "dense" or k not in own):
                continue
            live = [a for a in lst if highs[a] > lo]
            if len(live) != len(lst):
                lst[:] = live
            for a in live:
                if t == tk and own.get(a) != own[k]:
                    continue
                ra, rk = find(a), find(k)
                if ra == rk:
                    continue
                # the answer depends only on both layouts and the offset difference
                key = (lid[a], lid[k], lo - lows[a])
                hit = memo.get(key)
                if hit is None:
                    hit = memo[key] = _layouts_overlap(lows[a], layouts[a], lo, layouts[k], max_work)
                if hit:
                    union(a, k)
        lst = active.get(tk)
        if lst is None:
            active[tk] = [k]
        else:
            lst.append(k)
    return tuple(find(k) for k in range(m))  # roots are minimal positions


def _describe_fast(t):
    """``_describe`` for a plain tensor or ``nn.Parameter`` (the hot path: CPU/CUDA inlined)."""
    try:
        if t.layout is _strided and (t.is_cuda or t.is_cpu):
            p = t.data_ptr()
            if t.is_contiguous():
                nbytes = t.nbytes
                return (None, p, p + nbytes, p, nbytes, (), ()) if nbytes else _EMPTY
            shape = t.shape
            if 0 in shape:
                return _EMPTY
            return _strided_description(None, p, t.element_size(), shape, t.stride())
        return _describe(t)
    except Exception:
        return _UNKNOWN


def _file(i: int, d, spaces: dict, unknown: list) -> None:
    """Put tensor ``i`` (description ``d``) where the clustering looks for it."""
    if d is _EMPTY:
        return
    if d is _UNKNOWN:
        unknown.append(i)
        return
    lst = spaces.get(d[0])
    if lst is None:
        spaces[d[0]] = [(d[1], d[2], i, d)]
    else:
        lst.append((d[1], d[2], i, d))


def _unite(n: int, tensors, spaces: dict, unknown: list, max_work: int | None) -> list[int] | None:
    """Union-find parents (root = smallest index) over ``n`` positions, or None when nothing overlaps.

    ``spaces``: space -> [(lo, hi, idx, description)] of the inspectable, non-empty tensors;
    ``unknown``: positions of uninspectable tensors (they may overlap anything on their device).
    """
    parent: list[int] | None = None

    def union(x: int, y: int) -> None:
        assert parent is not None
        while parent[x] != x:
            x = parent[x]
        while parent[y] != y:
            y = parent[y]
        if x < y:
            parent[y] = x
        elif y < x:
            parent[x] = y

    for lst in spaces.values():
        if len(lst) < 2:
            continue
        # Sweep by lowest byte: clusters of transitively overlapping ranges.
        lst.sort(key=_first)
        clusters: list[list[tuple]] = []
        cluster = [lst[0]]
        cur_hi = lst[0][1]
        for item in lst[1:]:
            if item[0] < cur_hi:
                cluster.append(item)
                if item[1] > cur_hi:
                    cur_hi = item[1]
            else:
                if len(cluster) > 1:
                    clusters.append(cluster)
                cluster = [item]
                cur_hi = item[1]
        if len(cluster) > 1:
            clusters.append(cluster)
        for cl in clusters:
            cl.sort(key=_third)  # sequence order
            # a contiguous CPU/CUDA tensor may come without its description (guard_key)
            cds = [item[3] or (None, item[0], item[1], item[0], item[1] - item[0], (), ()) for item in cl]
            clo = cl[0][0]
            for item in cl:
                if item[0] < clo:
                    clo = item[0]
            key = (max_work, *[(d[4], d[5], d[6], d[3] - clo) for d in cds])
            joins = _CLUSTER_CACHE.get(key)
            if joins is None:
                loc = _cluster_labels(cds, max_work)
                joins = tuple((root, pos) for pos, root in enumerate(loc) if root != pos)
                if len(_CLUSTER_CACHE) >= _CLUSTER_CACHE_MAX:
                    _CLUSTER_CACHE.clear()
                _CLUSTER_CACHE[key] = joins
            if joins:
                if parent is None:
                    parent = list(range(n))
                for root, pos in joins:
                    union(cl[root][2], cl[pos][2])

    if unknown:
        if parent is None:
            parent = list(range(n))
        others = unknown + [item[2] for lst in spaces.values() for item in lst]
        for u in unknown:
            for j in others:
                if j != u and not _provably_apart(tensors[u], tensors[j]):
                    union(u, j)
    return parent


def _root(parent: list[int], i: int) -> int:
    while parent[i] != i:
        i = parent[i]
    return i  # union keeps the smaller index as root


def overlap_components(tensors: Sequence[object], *, max_work: int | None = DEFAULT_MAX_WORK) -> tuple[int, ...]:
    """Canonical labels of the connected components of ``may_overlap``.

    Non-tensors get ``-1``; a tensor gets the index (in ``tensors``) of the
    first member of its component, so equal alias structure gives an equal
    tuple.  Tensors are first clustered by overlapping byte ranges (a sort
    and a sweep); only tensors in a cluster of two or more are compared
    exactly, and a cluster's answer is cached by its relative layout, so
    repeated calls with the same structure cost a description per tensor, a
    sort and a dictionary lookup per cluster.
    """
    n = len(tensors)
    labels = [-1] * n
    spaces: dict[object, list[tuple]] = {}
    unknown: list[int] = []
    for i, t in enumerate(tensors):
        tp = type(t)
        if tp is _Tensor or tp is _Parameter:
            d = _describe_fast(t)
        elif isinstance(t, _Tensor):
            d = _UNKNOWN
        else:
            continue
        labels[i] = i
        _file(i, d, spaces, unknown)
    parent = _unite(n, tensors, spaces, unknown, max_work)
    if parent is None:
        return tuple(labels)
    for i in range(n):
        if labels[i] >= 0:
            labels[i] = _root(parent, i)
    return tuple(labels)


def overlap_groups(tensors: Sequence[object], *, max_work: int | None = DEFAULT_MAX_WORK) -> list[list[int]]:
    """Components of :func:`overlap_components` with at least two members."""
    groups: dict[int, list[int]] = {}
    for i, lab in enumerate(overlap_components(tensors, max_work=max_work)):
        if lab >= 0:
            groups.setdefault(lab, []).append(i)
    return [g for g in groups.values() if len(g) > 1]


def shared_storage_groups(
    labelled: Iterable[tuple[object, torch.Tensor]], *, uninspectable_share: bool = True
) -> list[list[object]]:
    """Labels of the tensors that share a storage, overlapping or not, in groups of two or more.

    ``labelled``: ``(label, tensor)`` pairs. This is Thunder's notion of aliased
    inputs (and a cheap pre-filter for :func:`may_overlap`). Tensors with no
    inspectable storage form one group (they may share anything), or are left
    out with ``uninspectable_share=False``.

    >>> x = torch.zeros(4, 6)
    >>> shared_storage_groups([("a", x[0, 0]), ("b", x[2]), ("c", torch.zeros(2))])
    [['a', 'b']]
    """
    by_storage: dict[tuple, list] = {}
    for label, t in labelled:
        try:
            key = (t.device, t.untyped_storage().data_ptr())
        except Exception:  # no inspectable storage
            if not uninspectable_share:
                continue
            key = ("uninspectable",)
        by_storage.setdefault(key, []).append(label)
    return [labels for labels in by_storage.values() if len(labels) > 1]
