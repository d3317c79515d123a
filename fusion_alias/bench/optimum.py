"""The fewest regions any legal partition of a dependency graph can have.

A *legal partition* (the bench's definition, DESIGN.md §4): every fusible node
that does not name a write's destination (``partition.destination_views``) is
assigned to a region such that

* no ``unsafe`` edge has both ends in one region, and
* contracting every region to one node (unfusible nodes and destination views
  stay singletons) leaves the graph acyclic.

Regions made of view prims only run on torch and are not counted.

Two tools:

* :func:`lower_bound`: the longest chain of non-view fusible nodes that must be
  pairwise in different regions. ``u`` must be separated from a later ``w``
  when some path ``u ⇝ w`` crosses an unsafe edge or passes through a node
  that cannot be in a region: putting both in one region would either put an
  unsafe edge inside it or make the contracted graph cyclic. Polynomial
  (bitsets), used on programs of any size.
* :func:`search`: exact branch and bound over assignments in program order
  (each node joins an open region or opens a new one, the standard
  set-partition enumeration, so no partition is visited twice), pruned by the
  best count so far and stopped as soon as it meets the lower bound.

>>> # tanh_pow4: copy_(tanh(a), a); mul(t, t) ... : lower bound 1 = optimum 1
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
import time

import networkx as nx

from fusion_alias import ops
from fusion_alias.partition import destination_views


@dataclass
class Problem:
    """The graph as bitsets, restricted to what legality needs."""

    n: int
    fusible: list[bool]  # may join a region
    is_view: list[bool]
    succ: list[int]  # bitset of successors
    pred: list[int]
    unsafe_adj: list[int]  # bitset of nodes joined to this one by an unsafe edge (either direction)
    unsafe_succ: list[int]

    @property
    def fusible_nodes(self) -> list[int]:
        return [v for v in range(self.n) if self.fusible[v]]

    @property
    def counted_nodes(self) -> list[int]:
        return [v for v in range(self.n) if self.fusible[v] and not self.is_view[v]]


def make_problem(bsyms: Sequence, graph: nx.DiGraph, is_fusible: Callable) -> Problem:
    n = len(bsyms)
    memory_views = destination_views(bsyms)
    fusible = [bool(is_fusible(b)) and i not in memory_views for i, b in enumerate(bsyms)]
    is_view = [ops.is_view(b) for b in bsyms]
    succ, pred, unsafe_adj, unsafe_succ = [0] * n, [0] * n, [0] * n, [0] * n
    for u, v, data in graph.edges(data=True):
        if u > v:
            raise ValueError(f"edge {u}->{v} goes backwards: node indices must be a topological order")
        succ[u] |= 1 << v
        pred[v] |= 1 << u
        if data.get("unsafe"):
            unsafe_adj[u] |= 1 << v
            unsafe_adj[v] |= 1 << u
            unsafe_succ[u] |= 1 << v
    return Problem(n, fusible, is_view, succ, pred, unsafe_adj, unsafe_succ)


def _bits(x: int):
    while x:
        low = x & -x
        yield low.bit_length() - 1
        x ^= low


def count_regions(problem: Problem, regions: Sequence[Sequence[int]]) -> int:
    """Regions holding at least one non-view node."""
    return sum(1 for r in regions if any(not problem.is_view[v] for v in r))


def check_legal(problem: Problem, regions: Sequence[Sequence[int]]) -> str | None:
    """None when ``regions`` is a legal partition, else the reason it is not."""
    seen: dict[int, int] = {}
    for rid, members in enumerate(regions):
        for v in members:
            if not problem.fusible[v]:
                return f"node {v} cannot be in a region"
            if v in seen:
                return f"node {v} is in two regions"
            seen[v] = rid
    for rid, members in enumerate(regions):
        mask = 0
        for v in members:
            mask |= 1 << v
        for v in members:
            if problem.unsafe_adj[v] & mask:
                return f"region {rid} holds both ends of an unsafe edge at node {v}"
    quotient = nx.DiGraph()
    label = lambda v: ("r", seen[v]) if v in seen else ("n", v)  # noqa: E731
    quotient.add_nodes_from(label(v) for v in range(problem.n))
    for u in range(problem.n):
        for v in _bits(problem.succ[u]):
            if label(u) != label(v):
                quotient.add_edge(label(u), label(v))
    if not nx.is_directed_acyclic_graph(quotient):
        return "contracting the regions leaves a cycle"
    return None


def lower_bound(problem: Problem) -> int:
    """Longest chain of non-view fusible nodes that must be pairwise separated (see module doc)."""
    n = problem.n
    reach = [0] * n  # nodes reachable from v (v excluded)
    forced = [0] * n  # nodes w reachable from v by a path that forces v and w apart
    for u in range(n - 1, -1, -1):
        r = f = 0
        for x in _bits(problem.succ[u]):
            rx = (1 << x) | reach[x]
            r |= rx
            if problem.unsafe_succ[u] >> x & 1:
                f |= rx
            elif not problem.fusible[x]:
                f |= reach[x]  # x itself stays outside; anything after it is cut off
            else:
                f |= forced[x]
        reach[u], forced[u] = r, f
    counted = 0
    for v in problem.counted_nodes:
        counted |= 1 << v
    chain = [0] * n
    best = 0
    for u in range(n):  # program order is a topological order
        if not counted >> u & 1:
            continue
        chain[u] = max(chain[u], 1)
        best = max(best, chain[u])
        for w in _bits(forced[u] & counted):
            if chain[w] < chain[u] + 1:
                chain[w] = chain[u] + 1
    return best


@dataclass
class SearchResult:
    best: int  # fewest regions found (== the optimum when exact)
    exact: bool  # False when the search was cut off by its budget
    regions: list[list[int]]
    expanded: int
    seconds: float


def search(
    problem: Problem,
    upper: list[list[int]] | None = None,
    lower: int = 0,
    *,
    max_expanded: int = 2_000_000,
    max_seconds: float = 30.0,
) -> SearchResult:
    """Exact minimum of counted regions over legal partitions (see module doc).

    ``upper`` is a known legal partition (the search looks for strictly fewer
    regions); ``lower`` a known lower bound (the search stops when it meets it).
    """
    start = time.perf_counter()
    order = problem.fusible_nodes
    succ, pred = problem.succ, problem.pred
    if upper is not None:
        best_regions = [list(r) for r in upper]
        best = count_regions(problem, upper)
    else:
        best_regions = [[v] for v in order]
        best = count_regions(problem, best_regions)
    if best <= lower:
        return SearchResult(best, True, best_regions, 0, time.perf_counter() - start)

    comp = [-1] * problem.n  # region id of an assigned node
    masks: list[int] = []  # region id -> member bitset
    region_succ: list[int] = []  # region id -> successors of its members
    counted: list[bool] = []
    expanded = 0
    aborted = False

    def comp_mask(x: int) -> int:
        r = comp[x]
        return masks[r] if r >= 0 else 1 << x

    def comp_succ(x: int) -> int:
        r = comp[x]
        return region_succ[r] if r >= 0 else succ[x]

    def creates_cycle(rid: int, v: int) -> bool:
        """Would adding v to region rid close a cycle?  Only paths back into v are new."""
        rmask = masks[rid]
        below = (1 << v) - 1
        frontier = region_succ[rid] & below & ~rmask
        visited = 0
        target = pred[v] & ~rmask
        while True:
            todo = frontier & ~visited
            if not todo:
                return False
            x = (todo & -todo).bit_length() - 1
            visited |= comp_mask(x)
            if visited & target:
                return True
            frontier |= comp_succ(x) & below & ~rmask

    def recurse(i: int, used: int) -> None:
        nonlocal best, best_regions, expanded, aborted
        if aborted:
            return
        if i == len(order):
            if used < best:
                best = used
                best_regions = [[v for v in _bits(m)] for m in masks]
            return
        expanded += 1
        if expanded % 4096 == 0 and (expanded > max_expanded or time.perf_counter() - start > max_seconds):
            aborted = True
            return
        v = order[i]
        view = problem.is_view[v]
        # join an open region (most recent first: they are the likeliest to be legal)
        for rid in range(len(masks) - 1, -1, -1):
            new_used = used + (0 if (counted[rid] or view) else 1)
            if new_used >= best:
                continue
            if problem.unsafe_adj[v] & masks[rid]:
                continue
            if creates_cycle(rid, v):
                continue
            old = (masks[rid], region_succ[rid], counted[rid])
            masks[rid] |= 1 << v
            region_succ[rid] |= succ[v]
            counted[rid] = counted[rid] or not view
            comp[v] = rid
            recurse(i + 1, new_used)
            comp[v] = -1
            masks[rid], region_succ[rid], counted[rid] = old
            if aborted or best <= lower:
                return
        # open a new region
        new_used = used + (0 if view else 1)
        if new_used < best:
            masks.append(1 << v)
            region_succ.append(succ[v])
            counted.append(not view)
            comp[v] = len(masks) - 1
            recurse(i + 1, new_used)
            comp[v] = -1
            masks.pop()
            region_succ.pop()
            counted.pop()

    recurse(0, 0)
    return SearchResult(best, not aborted, best_regions, expanded, time.perf_counter() - start)
