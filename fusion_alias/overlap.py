"""Exact input-overlap analysis for strided tensors.

Public API
----------
``may_overlap(a, b, *, max_work=DEFAULT_MAX_WORK) -> bool``
    True when two tensors may share at least one byte of memory.
(``components.py`` builds the components of many tensors on it, ``guard.py`` the guard key.)
``overlap_detail(a, b, *, max_work=DEFAULT_MAX_WORK) -> OverlapVerdict``
    Like ``may_overlap`` but also says whether the answer is exact, which rung
    of the ladder decided it, and how much search work it took.
``may_overlap_itself(t) -> bool``
    True when two elements of one tensor may share memory (Note [a tensor whose
    elements overlap each other]).

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
from typing import NamedTuple

import torch

__all__ = ["DEFAULT_MAX_WORK", "OverlapVerdict", "may_overlap", "may_overlap_itself", "overlap_detail"]

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


def may_overlap_itself(t: torch.Tensor) -> bool:
    """True when two elements of ``t`` may share memory.

    Note [a tensor whose elements overlap each other]
    -------------------------------------------------
    Torch answers "yes" for a zero stride on a dimension of size > 1 (an ``expand()``ed tensor)
    and "too hard" for every layout that is not dense (``x[::2]``, ``x.as_strided(...)``). A write
    into a tensor whose elements overlap each other is not a function of its value:
    ``x.as_strided((3, 3), (1, 1)).add_(1)`` on ``x = zeros(6)`` gives ``[1, 2, 3, 2, 1, 0]`` in
    eager (its kernel adds 1 to a location once per element that refers to it), while a region
    writes back one value per location, ``[1, 1, 1, 1, 1, 0]``. So writes into such tensors are
    refused (``refusals/writes.py``), and this question must not answer "no" wrongly.

    Sorted by stride, the dimensions of size > 1 of a layout whose every stride exceeds the span
    of the smaller ones (``stride_k > sum_{j<k} stride_j * (size_j - 1)``) address distinct
    locations: each element's offset is its index written in a mixed radix. Every chain of views
    torch makes from a tensor that has this property keeps it (slices with steps, selects,
    permutes, reshapes that view), so only ``as_strided`` and zero strides fail it: for those
    the answer is "may" (``(2, 3)`` with strides ``(3, 2)`` does not overlap but is answered True).
    Example: ``x[:, ::2]`` of a ``(4, 6)`` ``x``: sizes ``(4, 3)``, strides ``(6, 2)``: stride 2
    over span 0, stride 6 over span 4: no overlap. ``as_strided((3, 3), (1, 1))``: stride 1
    over span 2: may overlap.
    """
    if t.numel() <= 1:
        return False
    span = 0
    for stride, size in sorted((abs(st), sz) for sz, st in zip(t.shape, t.stride()) if sz > 1):
        if stride <= span:
            return True
        span += stride * (size - 1)
    return False


def _view_bits(t) -> tuple[bool, bool]:
    """``(t.is_conj(), t.is_neg())`` of a tensor, (False, False) for anything else: views that share memory and
    layout but read it conjugated or negated (guard.py, Note [conjugate and negative views in the key])."""
    try:
        return (bool(t.is_conj()), bool(t.is_neg()))
    except Exception:  # noqa: BLE001 - not a tensor, or one without the bits
        return (False, False)
