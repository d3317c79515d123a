"""Exact input-overlap analysis for strided tensors.

Public API
----------
``may_overlap(a, b, *, max_work=DEFAULT_MAX_WORK) -> bool``
    True when two tensors may share at least one byte of memory.
``overlap_components(tensors, *, max_work=DEFAULT_MAX_WORK) -> tuple[int, ...]``
    Canonical connected-component labels of the ``may_overlap`` graph over a
    sequence of call arguments (non-tensors get ``-1``).  Meant to be used as a
    per-call cache guard: equal alias structure gives an equal tuple.
``overlap_groups(tensors, *, max_work=DEFAULT_MAX_WORK) -> list[list[int]]``
    The components with at least two members, as index lists.
``overlap_detail(a, b, *, max_work=DEFAULT_MAX_WORK) -> OverlapVerdict``
    Like ``may_overlap`` but also says whether the answer is exact, which rung
    of the ladder decided it, and how much search work it took.

The ladder (cheapest first)
---------------------------
Every tensor is described in *bytes*: ``lo`` is the address of its lowest
byte, and each dimension of size > 1 and stride != 0 contributes a term
``(|stride| * itemsize, size - 1)`` (a negative stride is folded into ``lo``;
size-1 dimensions and zero strides contribute nothing).  A contiguous tensor
is described as a single element ``nbytes`` wide (exact, and cheapest).  For CPU and CUDA
tensors addresses are absolute (``Tensor.data_ptr()``), which is the same as
comparing ``untyped_storage().data_ptr()`` plus offsets, but is also right for
two *different* storage objects that wrap overlapping memory (e.g.
``torch.from_numpy(a)`` and ``torch.from_numpy(a[1:])``).  On other devices
addresses are only compared within one storage.

1. ``storage``: tensors whose storages are provably different (different
   storage on a non-CPU/CUDA device, different devices for tensors whose
   storage cannot be inspected) => False.  Tensors that cannot be inspected
   (tensor subclasses other than ``nn.Parameter``, non-strided layouts, meta
   tensors, tensors without storage) are otherwise conservatively True.
2. ``empty``: a tensor with ``numel() == 0`` owns no byte => False.
3. ``extent``: disjoint byte ranges ``[lo, hi)`` => False.
4. ``dense``: both tensors cover their whole byte range without holes (after
   merging collapsible dimensions: contiguous, transposed-contiguous, ...)
   => the byte-range test was exact => True.
5. ``gcd``: the exact problem below has a solution only if a multiple of the
   gcd of all (merged) coefficients lies in the target window => else False.
6. ``solve``: exact bounded search; ``cap`` if it ran out of work (=> True).

The exact problem
-----------------
Tensor ``A`` (lowest byte ``la``, itemsize ``p``, terms ``(s_k, u_k)``) and
``B`` (``lb``, ``q``, ``(t_k, v_k)``) share a byte iff there are integers
``0 <= i_k <= u_k``, ``0 <= j_k <= v_k`` such that the byte intervals
``[A, A + p)`` and ``[B, B + q)`` intersect, where ``A = la + sum i_k s_k``
and ``B = lb + sum j_k t_k``; that is ``B - A`` in ``[-(q - 1), p - 1]``.
Substituting ``j_k = v_k - j'_k`` so that every coefficient is positive::

    sum_k s_k i_k + sum_k t_k j'_k  in  [L, U]
    L = lb - la + sum_k t_k v_k - (p - 1),   U = L + (p - 1) + (q - 1)

The window ``[L, U]`` of width ``p + q - 1`` is the "slack" for the element
widths.  So the question is whether a box-bounded positive linear form hits a
small window.  The solver (written for this project):

* merges terms: equal coefficients add their bounds, and ``(c, u)`` absorbs
  ``(k*c, v)`` when ``u >= k - 1`` (the sums then cover ``c * [0, u + k*v]``
  without holes).  This collapses contiguous runs of dimensions, so most
  realistic problems shrink to one or two terms;
* runs a depth-first search over the largest coefficient first: at each level
  the feasible values of the current variable are those that keep the target
  reachable by the remaining terms (interval pruning with the suffix maximum),
  and a subproblem is dropped when no multiple of the suffix gcd lies in its
  window (gcd pruning).  Failed ``(level, window)`` states are memoised;
* solves the last two variables in closed form: with a modular inverse, one
  ``O(1)`` step per admissible target value in the window, or, when that is
  fewer steps (wide windows, i.e. a large element such as a contiguous
  block), one ``O(1)`` step per feasible value of the larger-coefficient
  variable.

``work`` counts search nodes plus closed-form steps.  When it exceeds
``max_work`` the answer is ``True`` (conservative: "may overlap").
``max_work=None`` means unbounded (exact).

DEFAULT_MAX_WORK
----------------
``DEFAULT_MAX_WORK = 4096``.  One unit of work is one Python-level search
step, ~0.5-1 us, so a capped query costs a few milliseconds at most.  The
guard only reaches the search for pairs that (a) live in the same memory,
(b) have overlapping byte ranges, (c) are not both dense and (d) pass the gcd
test, and ``overlap_components`` caches the answer per alias structure, so the
search is paid once per structure, not per call.  Measured (see
``python -m fusion_alias.bench_guard`` and the tests):

* random strided views of one buffer (0-4 dims of 0-6 elements, strides
  0-64 incl. zero, mixed dtypes): the largest search over 10,000 pairs took
  8 steps; over 20,000 pairs with 5 dims of up to 12 elements and strides up
  to 200, 24 steps;
* adversarial views that interleave without touching, ``as_strided`` with
  20 elements per dim and strides ``(1000, 999, 998, 997)`` (or four nearby
  primes) shifted by a few hundred elements: ~3,100 steps, solved exactly
  under the cap; with a fifth stride 996 (12 per dim): ~24,000 steps, capped.

So the cap is two orders of magnitude above what realistic layouts need, still
answers 4-D adversarial layouts exactly, and bounds the cold cost of anything
worse to a few milliseconds.  A capped answer is a false positive, which only
costs performance (the caller takes the alias-safe path), never correctness.

Note (worked example)
---------------------
``x = torch.zeros(4, 6)`` (float32).  ``a = x[:, ::2]`` has byte strides
``(24, 8)``, sizes ``(4, 3)``, offset 0; ``b = x[:, 1::2]`` is the same with
offset 4.  Byte ranges: ``a`` spans ``[0, 92)`` and ``b`` spans ``[4, 96)``,
so the range test says "may overlap".  The exact problem has terms
``(24, 3), (8, 2)`` from ``a`` and ``(24, 3), (8, 2)`` from ``b`` and the
window ``L = 4 - 0 + (24*3 + 8*2) - 3 = 89``, ``U = 89 + 3 + 3 = 95``.
Merging gives ``(8, 2) + (8, 2) -> (8, 4)``, then ``(24, 3)`` with
``24 = 3*8`` and ``4 >= 2`` gives ``(8, 13)``, and again ``(8, 22)``: every
reachable sum is a multiple of 8, and ``[89, 95]`` contains none (88 < 89,
96 > 95).  So ``may_overlap(a, b)`` is False, decided at the ``gcd`` rung.
"""

from __future__ import annotations

from math import gcd
from operator import itemgetter
from typing import Iterable, NamedTuple, Sequence

import torch

__all__ = [
    "DEFAULT_MAX_WORK",
    "OverlapVerdict",
    "may_overlap",
    "overlap_components",
    "overlap_detail",
    "overlap_groups",
    "guard_key",
    "shared_storage_groups",
]

DEFAULT_MAX_WORK = 4096

_Tensor = torch.Tensor
_Parameter = torch.nn.Parameter
_strided = torch.strided


class OverlapVerdict(NamedTuple):
    """Answer of :func:`overlap_detail`.

    ``overlap``: the conservative answer (same as :func:`may_overlap`).
    ``exact``: True when ``overlap`` is exactly "the tensors share a byte"
    (False when a conservative rule answered: uninspectable tensor or cap).
    ``stage``: the rung that decided (storage, empty, extent, dense, gcd,
    solve, cap, unknown).  ``work``: search steps spent.
    """

    overlap: bool
    exact: bool
    stage: str
    work: int


# ---------------------------------------------------------------------------
# Descriptions of tensors.
#
# ``_describe(t)`` returns one of
#   _UNKNOWN  -> cannot be inspected (conservative)
#   _EMPTY    -> owns no byte
#   (space, lo, hi, base, isz, shape, stride)
# where ``space`` is None for CPU/CUDA (absolute addresses) or a hashable key
# naming one storage on another device, ``[lo, hi)`` are the bytes spanned,
# ``base`` is the address of element [0, ..., 0].  A contiguous tensor covers
# exactly its byte range, so it is described as one element of ``nbytes``
# bytes (``shape == stride == ()``): that is exact, and it is the cheapest
# description (no shape or stride to read).


class _Marker:
    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:  # pragma: no cover - debugging aid
        return self.name


_UNKNOWN = _Marker("UNKNOWN")
_EMPTY = _Marker("EMPTY")


def _describe(t: object):
    """Description of ``t`` (see above).  Tensor subclasses other than
    ``nn.Parameter`` are not inspected."""
    tp = type(t)
    if tp is not _Tensor and tp is not _Parameter:
        return _UNKNOWN
    try:
        if t.layout is not _strided:
            return _UNKNOWN
        if t.is_cuda or t.is_cpu:
            space = None
            base = t.data_ptr()
        elif t.is_meta:
            return _EMPTY if 0 in t.shape else _UNKNOWN
        else:
            space = (str(t.device), t.untyped_storage().data_ptr())
            base = t.storage_offset() * t.element_size()
        if t.is_contiguous():
            nbytes = t.nbytes
            if nbytes == 0:
                return _EMPTY
            return (space, base, base + nbytes, base, nbytes, (), ())
        shape = t.shape
        if 0 in shape:
            return _EMPTY
        stride = t.stride()
        isz = t.element_size()
    except Exception:  # no storage, nested tensors, functional wrappers, ...
        return _UNKNOWN
    return _strided_description(space, base, isz, shape, stride)


def _strided_description(space, base: int, isz: int, shape, stride) -> tuple:
    """Description of a non-contiguous, non-empty tensor: its byte span from its strides."""
    pos = neg = 0
    for n, s in zip(shape, stride):
        if s > 0:
            pos += (n - 1) * s
        elif s < 0:
            neg += (n - 1) * s
    return (space, base + neg * isz, base + (pos + 1) * isz, base, isz, shape, stride)


def _device_of(t: object):
    try:
        return t.device  # type: ignore[attr-defined]
    except Exception:
        return None


def _provably_apart(a: object, b: object) -> bool:
    """For an uninspectable tensor: different devices => different storages."""
    da, db = _device_of(a), _device_of(b)
    return da is not None and db is not None and da != db


# ---------------------------------------------------------------------------
# The exact solver.


class _CapHit(Exception):
    pass


def _merge(terms: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Merge terms whose sum sets combine without holes (exact)."""
    terms = sorted(terms)
    out: list[list[int]] = []
    changed = True
    while changed:
        changed = False
        out = []
        for c, u in terms:
            for r in out:
                rc = r[0]
                if c % rc == 0 and r[1] >= c // rc - 1:
                    r[1] += (c // rc) * u
                    changed = True
                    break
            else:
                out.append([c, u])
        terms = [(c, u) for c, u in out]
    return terms


def _terms_of(desc) -> list[tuple[int, int]]:
    _, _, _, _, isz, shape, stride = desc
    return [(abs(s) * isz, n - 1) for n, s in zip(shape, stride) if n > 1 and s != 0]


def _solve(terms: list[tuple[int, int]], lo: int, hi: int, max_work: int | None) -> tuple[bool | None, int, str]:
    """Is there ``0 <= x_k <= u_k`` with ``sum c_k x_k`` in ``[lo, hi]``?

    ``terms`` are ``(c_k, u_k)`` with ``c_k > 0``.  Returns ``(answer, work,
    stage)``; ``answer`` is None when the work cap was hit.
    """
    terms = _merge([(c, u) for c, u in terms if c > 0 and u > 0])
    terms.sort(reverse=True)
    n = len(terms)
    R = [0] * (n + 1)  # suffix maximum of the sum
    G = [0] * (n + 1)  # suffix gcd
    for k in range(n - 1, -1, -1):
        c, u = terms[k]
        R[k] = R[k + 1] + c * u
        G[k] = gcd(G[k + 1], c)
    # Rungs that need no search: empty window after clamping, or gcd test.
    lo0, hi0 = max(lo, 0), min(hi, R[0])
    if lo0 > hi0:
        return False, 0, "extent"
    if n == 0:
        return True, 0, "solve"
    g0 = G[0]
    if -(-lo0 // g0) * g0 > hi0:
        return False, 0, "gcd"
    if n == 1:
        return True, 0, "solve"

    work = 0
    failed: set[tuple[int, int, int]] = set()

    def step() -> None:
        nonlocal work
        work += 1
        if max_work is not None and work > max_work:
            raise _CapHit

    def two(k: int, lo: int, hi: int) -> bool:
        # c1*x1 + c2*x2 in [lo, hi] with c1 > c2, closed form per target value.
        (c1, u1), (c2, u2) = terms[k], terms[k + 1]
        g = G[k]
        v = -(-lo // g) * g
        top2 = c2 * u2
        x1min = max(0, -((top2 - lo) // c1))  # ceil((lo - c2*u2) / c1)
        x1max = min(u1, hi // c1)
        if x1max - x1min <= (hi - v) // g:
            # Wide window (e.g. a large element): enumerate x1 instead.
            for x1 in range(x1min, x1max + 1):
                step()
                r_lo, r_hi = lo - c1 * x1, min(hi - c1 * x1, top2)
                if r_lo < 0:
                    r_lo = 0
                if -(-r_lo // c2) * c2 <= r_hi:
                    return True
            return False
        a, b = c1 // g, c2 // g
        inv = pow(a, -1, b)
        while v <= hi:
            step()
            w = v // g
            x1 = (w * inv) % b  # smallest x1 >= 0 with a*x1 = w (mod b)
            if x1 <= u1:
                x2 = (w - a * x1) // b  # x2 for that x1; x1 += b*k, x2 -= a*k
                kmax = min((u1 - x1) // b, x2 // a)
                kmin = max(0, -((u2 - x2) // a))  # ceil((x2 - u2) / a)
                if kmin <= kmax:
                    return True
            v += g
        return False

    def dfs(k: int, lo: int, hi: int) -> bool:
        if lo < 0:
            lo = 0
        if hi > R[k]:
            hi = R[k]
        if lo > hi:
            return False
        g = G[k]
        if -(-lo // g) * g > hi:
            return False
        if k == n - 1:
            return True  # one term left, c == g, and a multiple of c fits
        if k == n - 2:
            return two(k, lo, hi)
        key = (k, lo, hi)
        if key in failed:
            return False
        c, u = terms[k]
        rest = R[k + 1]
        xmin = max(0, -((rest - lo) // c))  # ceil((lo - rest) / c)
        xmax = min(u, hi // c)
        for x in range(xmin, xmax + 1):
            step()
            if dfs(k + 1, lo - c * x, hi - c * x):
                return True
        failed.add(key)
        return False

    try:
        return dfs(0, lo0, hi0), work, "solve"
    except _CapHit:
        return None, work, "cap"


def _pair(da, db, max_work: int | None) -> OverlapVerdict:
    """Both descriptions inspectable, non-empty and in the same space."""
    la, ha, pa = da[1], da[2], da[4]
    lb, hb, pb = db[1], db[2], db[4]
    if ha <= lb or hb <= la:
        return OverlapVerdict(False, True, "extent", 0)
    ta, tb = _terms_of(da), _terms_of(db)
    ma, mb = _merge(ta), _merge(tb)
    if (not ma or (len(ma) == 1 and ma[0][0] == pa)) and (not mb or (len(mb) == 1 and mb[0][0] == pb)):
        return OverlapVerdict(True, True, "dense", 0)
    L = lb - la + sum(c * u for c, u in mb) - (pa - 1)
    U = L + (pa - 1) + (pb - 1)
    ans, work, stage = _solve(ma + mb, L, U, max_work)
    if ans is None:
        return OverlapVerdict(True, False, "cap", work)
    return OverlapVerdict(ans, True, stage, work)


def _verdict(a: object, b: object, da, db, max_work: int | None) -> OverlapVerdict:
    if da is _EMPTY or db is _EMPTY:
        return OverlapVerdict(False, True, "empty", 0)
    if da is _UNKNOWN or db is _UNKNOWN:
        if _provably_apart(a, b):
            return OverlapVerdict(False, True, "storage", 0)
        return OverlapVerdict(True, False, "unknown", 0)
    if da[0] != db[0]:
        return OverlapVerdict(False, True, "storage", 0)
    return _pair(da, db, max_work)


def overlap_detail(a: torch.Tensor, b: torch.Tensor, *, max_work: int | None = DEFAULT_MAX_WORK) -> OverlapVerdict:
    """:func:`may_overlap` plus exactness, deciding rung and work spent."""
    if not isinstance(a, _Tensor) or not isinstance(b, _Tensor):
        raise TypeError("overlap_detail expects two tensors")
    return _verdict(a, b, _describe(a), _describe(b), max_work)


def may_overlap(a: torch.Tensor, b: torch.Tensor, *, max_work: int | None = DEFAULT_MAX_WORK) -> bool:
    """True when ``a`` and ``b`` may share at least one byte.

    Exact for inspectable (plain or ``nn.Parameter``, strided, CPU/CUDA or
    other real-device) tensors unless the search exceeds ``max_work`` steps,
    in which case it answers True.  ``max_work=None`` searches without bound.
    """
    return overlap_detail(a, b, max_work=max_work).overlap


# ---------------------------------------------------------------------------
# Components (per-call guard).

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


# Note [what the guard key holds]
# -------------------------------
# A compiled program is reused only for calls whose key equals the key of the
# call it was compiled for. Thunder's own prologue already checks each
# tensor's shape, dtype, device and requires_grad, so the key adds only what
# the fusion pass decided from the actual memory and Thunder does not check:
#
# * joins: which tensors may share a byte (components of ``may_overlap``);
# * layouts: the strides of every non-contiguous tensor. A reshape of a
#   transposed input is a copy where the same reshape of a contiguous one is a
#   view, and a write into an expanded (stride-0) input is refused, so
#   ``x`` and ``x.t()`` (same shape when square) or ``x`` and
#   ``y.expand(3, 3)`` must not share a program;
# * offsets: within a component of two or more, each member's byte offset
#   from the component's first member. With the shapes and strides this is
#   the exact relation: ``(x, x)`` and ``(x, x.t())`` are one component each,
#   but ``a.add_(b)`` is a partial overlap (eager raises) only in the second.
#
# Worked example: ``f(x, x)`` with ``x`` 3x3 contiguous gives
# ``joins ((1, 0),)``, ``layouts ()``, ``offsets ((1, 0),)``; ``f(x, x.t())``
# gives the same joins but ``layouts ((1, (1, 3)),)``: another program.
# Independent contiguous inputs, the common case, give ``((), (), ())``.

_LEAF_TYPES = frozenset({int, float, bool, complex, str, type(None), torch.dtype, torch.device})


def guard_key(items: Sequence[object], *, max_work: int | None = DEFAULT_MAX_WORK, flat_only: bool = False):
    """``(key, any_requires_grad)`` for a call's flattened tensors and other leaves.

    ``key`` is ``(joins, layouts, offsets)`` (see Note [what the guard key
    holds]): equal keys mean the same overlap components, the same strides of
    non-contiguous tensors and the same relative offsets inside components.
    With ``flat_only`` it returns None as soon as an item is neither a tensor
    nor a plain scalar (so the caller knows it must flatten first).

    >>> x = torch.zeros(3, 3)
    >>> guard_key([x, torch.zeros(3)])[0]
    ((), (), ())
    >>> guard_key([x, x.t()])[0]
    (((1, 0),), ((1, (1, 3)),), ((1, 0),))
    """
    # The hot path (one pass, per-call): a plain contiguous CPU/CUDA tensor costs a few
    # attribute reads and one tuple; its full description is built only if its byte
    # range meets another's (see _unite).
    addr: list[tuple] = []  # CPU/CUDA: (lo, hi, idx, description or None when contiguous)
    spaces: dict[object, list[tuple]] = {None: addr}
    unknown: list[int] = []
    layouts: list[tuple] = []
    grad = False
    for i, t in enumerate(items):
        tp = type(t)
        if tp is _Tensor or tp is _Parameter:
            if t.requires_grad:
                grad = True
            try:
                if t.layout is _strided and (t.is_cpu or t.is_cuda):
                    p = t.data_ptr()
                    if t.is_contiguous():
                        nbytes = t.nbytes
                        if nbytes:
                            addr.append((p, p + nbytes, i, None))
                        continue
                    shape = t.shape
                    if 0 in shape:
                        continue
                    d = _strided_description(None, p, t.element_size(), shape, t.stride())
                    layouts.append((i, d[6]))
                    addr.append((d[1], d[2], i, d))
                    continue
                d = _describe(t)
            except Exception:
                d = _UNKNOWN
        elif isinstance(t, _Tensor):
            try:
                grad = grad or bool(t.requires_grad)
            except Exception:
                pass
            d = _UNKNOWN
        elif flat_only and tp not in _LEAF_TYPES:
            return None
        else:
            continue
        if d is not _UNKNOWN and d is not _EMPTY and d[5]:
            layouts.append((i, d[6]))
        _file(i, d, spaces, unknown)
    if len(spaces) == 1 and not unknown:
        # the common case: CPU/CUDA tensors whose byte ranges do not meet
        addr.sort(key=_first)
        top = -1
        for lo, hi, _, _ in addr:
            if lo < top:
                break
            top = hi
        else:
            return ((), tuple(layouts), ()), grad
    parent = _unite(len(items), items, spaces, unknown, max_work)
    if parent is None:
        return ((), tuple(layouts), ()), grad
    joins = []
    offsets = []
    for i in range(len(items)):
        r = _root(parent, i)
        if r != i:
            joins.append((i, r))
            d, dr = _describe(items[i]), _describe(items[r])
            if d is _UNKNOWN or dr is _UNKNOWN or d is _EMPTY or dr is _EMPTY:
                offsets.append((i, None))
            else:
                offsets.append((i, d[3] - dr[3]))
    return (tuple(joins), tuple(layouts), tuple(offsets)), grad


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
