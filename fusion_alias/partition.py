"""Partition the dependency graph into fusion regions.

Stage assignment (as-soon-as-possible levels), one region per stage:

* a fusible node's stage is the largest of its predecessors' stages, plus one
  across an *unsafe* hazard edge, and plus one after any node that must run
  outside regions (an unfusible node ``u`` sits between region ``level(u)``
  and region ``level(u) + 1``);
* all fusible nodes of one stage form one region (nvFuser fuses independent
  components of one definition as well);
* the final order is region 0, the unfusible nodes of level 0, region 1, ...

Every edge goes from a stage to the same or a later one, and only safe edges
stay inside a stage, so contracting each region leaves the graph acyclic and
no unsafe hazard falls inside a region (DESIGN.md §4 rules 2-5). Rule 1 (a
write's destination is a region input) is kept by running the view prims that
name a destination outside regions: they are metadata only.

The pass is linear in nodes + edges.

>>> # a.tanh_(); return a * a * a * a   ->  one stage, one region
"""

from __future__ import annotations

import collections
import itertools
import operator

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import networkx as nx
from thunder.core.proxies import TensorProxy
from thunder.core.symbol import BoundSymbol
import thunder.core.prims as prims

from fusion_alias import ops
from fusion_alias.aliasing import tensor_args, tensor_outs
from fusion_alias.dependency_edges import UNSAFE, DependencyEdges
from fusion_alias.min_cut import _byte_counter, _nbytes  # noqa: F401 (``_nbytes``: tests count bytes with it)
from fusion_alias.min_cut import two_stages_by_min_cut as _two_stages_by_min_cut  # (tests spy on it here)


@dataclass
class Partition:
    """Result: an execution order of regions (lists of node indices) and lone nodes."""

    items: list[tuple[str, list[int]]] = field(default_factory=list)  # ("region"|"node", indices)
    stage: dict[int, int] = field(default_factory=dict)

    @property
    def regions(self) -> list[list[int]]:
        return [idx for kind, idx in self.items if kind == "region"]


def destination_views(bsyms: Sequence[BoundSymbol], producer: dict[str, int] | None = None,
                      copies: Sequence[int] | None = None) -> set[int]:
    """Indices of view prims whose result (through more views) is a copy_ destination.

    ``producer``: name -> index of its first producer in ``bsyms``, if the caller has it
    (``DependencyEdges.producer_idx``, over all proxy outputs: the tensor names in it are
    those this function would find); ``copies``: the indices of the ``copy_`` prims, if the
    caller has them (``DependencyEdges.copies``).
    """
    copy_id = ops.COPY_ID
    if copies is None:
        copies = [i for i, b in enumerate(bsyms) if b.sym.id is copy_id]
    if not copies:
        return set()
    if producer is None:  # (only views are followed: an index of the views' outputs answers alike)
        producer = {}
        for i, b in enumerate(bsyms):
            if id(b.sym.id) in ops._VIEW_ADDRS and isinstance(b.output, TensorProxy):
                producer.setdefault(b.output.name, i)
    marked: set[int] = set()
    seen: set[str] = set()  # (a destination written many times is followed once)
    stack = [bsyms[i].args[1] for i in copies]
    while stack:
        name = stack.pop()._name  # (aliasing.py, Note [proxy names read directly])
        if name in seen:
            continue
        seen.add(name)
        j = producer.get(name)
        if j is None or j in marked or not ops.is_view(bsyms[j]):
            continue
        marked.add(j)
        stack.append(bsyms[j].args[0])
    return marked


def backward_nodes(bsyms: Sequence[BoundSymbol], sym_ids: Sequence | None = None) -> set[int]:
    """Indices of the bound symbols that compute gradients: ``get_grad`` and all that reads its results
    (``sym_ids``: each bound symbol's ``sym.id``, if the caller has them).

    Note [forward and backward in one trace]: with gradients, the trace the pass
    gets is Thunder's joint trace; Thunder splits it into a forward and a backward
    *after* the fusion pass, by what each bound symbol reads. A region holding
    ``t2 = neg(a)`` (forward) and ``t8 = add(get_grad(a), ...)`` (backward) lands
    in the forward, which then reads a gradient that does not exist yet
    (UnboundLocalError; fuzz --grad, seed 2 #715). So forward and backward nodes
    of one stage form two regions, forward first: nothing in the forward reads
    the backward.
    """
    grads: set[str] = set()
    marked: set[int] = set()
    get_grad = prims.PrimIDs.GET_GRAD
    if sym_ids is None:
        sym_ids = [b.sym.id for b in bsyms]
    if get_grad not in sym_ids:  # (no gradient: nothing to mark)
        return marked
    for i, b in enumerate(bsyms):
        if b.sym.id is get_grad or (grads and any(a.name in grads for a in tensor_args(b))):
            marked.add(i)
            grads.update(o.name for o in tensor_outs(b))
    return marked


def _levels(n: int, graph, fusible: list[bool], ignore_hazards: bool) -> list[int]:
    """Stage of each fusible node, "last region it follows" for the others (module docstring).

    Node indices are a topological order (program order). ``graph``: a ``networkx.DiGraph``
    or the pass's ``dependency_edges.DependencyEdges`` (Note [the graph as arrays]).
    """
    if isinstance(graph, DependencyEdges):
        return _levels_of_arrays(graph, fusible, ignore_hazards)
    level = [0 if f else -1 for f in fusible]
    if list(graph) != list(range(n)):
        return _levels_node_by_node(n, graph, fusible, ignore_hazards)
    # Note [levels in one sweep over the edges]: ``in_edges`` yields the edges
    # grouped by head, heads in node order (0, 1, ...). When every edge also
    # points forward (u < v), a node's level is final before any edge out of
    # it is read, so one sweep over the raw edges computes what the
    # node-by-node loop does, without networkx's per-node views. A backward
    # edge sends the graph to that loop.
    for u, v, data in graph.in_edges(data=True):
        if u >= v:
            return _levels_node_by_node(n, graph, fusible, ignore_hazards)
        need = _level_after(level[u], fusible[u], fusible[v], data["unsafe"] and not ignore_hazards)
        if need > level[v]:
            level[v] = need
    return level


def _levels_of_arrays(edges: DependencyEdges, fusible: list[bool], ignore_hazards: bool) -> list[int]:
    """``_levels`` over the arrays, their edges in node order of their heads, as ``in_edges``
    yields them (Note [levels in one sweep over the edges]; ``DependencyEdges.in_node_order``'s
    merge of the data and hazard arrays, inlined)."""
    level = [0 if f else -1 for f in fusible]
    du, dv, hu, hv, hc = edges.data_u, edges.data_v, edges.hazard_u, edges.hazard_v, edges.hazard_code
    nh = len(hv)
    cut_unsafe = 0 if ignore_hazards else UNSAFE
    k = 0  # the next hazard edge
    # (a last head past every node drains the hazard edges after the last data edge)
    for u, v in itertools.chain(zip(du, dv), ((None, edges.n),)):
        while k < nh and hv[k] < v:
            hazard_v = hv[k]
            hazard_u = hu[k]
            if hazard_u >= hazard_v:
                return _levels_node_by_node(edges.n, edges.to_networkx(), fusible, ignore_hazards)
            need = level[hazard_u]
            if fusible[hazard_v] and (not fusible[hazard_u] or hc[k] & cut_unsafe):  # (_level_after, inlined)
                need += 1
            if need > level[hazard_v]:
                level[hazard_v] = need
            k += 1
        if u is None:
            break
        if u >= v:
            return _levels_node_by_node(edges.n, edges.to_networkx(), fusible, ignore_hazards)
        need = level[u]
        if fusible[v] and not fusible[u]:  # (a data edge is never unsafe)
            need += 1
        if need > level[v]:
            level[v] = need
    return level


def _sunk_levels(bsyms, sym_ids, n: int, es: list, data: list, fusible: list[bool], level: list[int],
                 ignore_hazards: bool) -> list[int]:
    """Note [each node in the stage that moves the fewest elements]
    ----------------------------------------------------------------
    As-soon-as-possible levels give the fewest stages, but not the fewest bytes
    between them: in seed ``h`` after ``base_updates``, the one-element read
    ``e = exp(a[0, 0])`` must come before the write of ``a``, and ASAP put
    everything else that could run early (``exp(a)``, the ``where`` that makes
    ``a``'s new value, the output ``mul``) in the first region too, which then
    handed ``exp(a)`` and the new value to the second region in buffers.

    A fusible node may sit at any level from the one its producers' levels
    force up to the latest its consumers allow (as-late-as-possible levels, one
    sweep from the last node; the ``return`` allows any). Walking the nodes in
    program order, each takes the level in that range whose edges carry the
    fewest elements across stages (its operands made at other levels, its
    value read at other levels), the later one on ties. No level grows past the
    largest, so the stage count is the same, and every edge still goes to the
    same or a later stage, unsafe ones to a later one. For ``h``: the first
    region reads ``a[0, 0]`` and hands one element over; the second does the rest.
    """
    top = max(level, default=-1)
    if top <= 0:
        return level
    ret = prims.PrimIDs.RETURN
    first = _first_in_edges(n, es)
    latest = [top if f else lvl for f, lvl in zip(fusible, level)]
    # a fusible node's fusible consumers' latest level when they share one, _MANY when they do not
    # (None: no fusible consumer); the closed form asks no more (Note [a candidate's cost from the operands' levels])
    only_level: list = [None] * n
    # (es backwards: heads descending, so a node's latest level is final before its in-edges; the
    # order of a head's own edges does not matter, each lowers a minimum or notes a level)
    for u, v, unsafe in reversed(es):
        if not fusible[u] or sym_ids[v] is ret:
            continue
        lv = latest[v]
        if fusible[v]:
            lim = lv - 1 if unsafe and not ignore_hazards else lv
            known = only_level[u]
            if known is None:
                only_level[u] = lv
            elif known is not _MANY and known != lv:
                only_level[u] = _MANY
        else:
            lim = lv
        if lim < latest[u]:
            latest[u] = lim
    sizes: dict[int, int] = {}
    nbytes = _byte_counter()

    def size(i: int) -> int:
        s = sizes.get(i)
        if s is None:
            s = sizes[i] = sum(map(nbytes, tensor_outs(bsyms[i])))
        return s

    if top == 1 and n <= _MIN_CUT_MAX_NODES:
        return _two_stages_by_min_cut(bsyms, es, first, data, fusible, level, latest, size)
    final = list(level)
    cut_unsafe = not ignore_hazards
    # (only a fusible node's latest level may differ from its ASAP one: the others keep theirs)
    for v in itertools.compress(range(n), map(operator.ne, latest, level)):
        ins = es[first[v]:first[v + 1]]
        lo = 0
        for u, _, unsafe in ins:
            need = final[u]
            if not fusible[u] or (unsafe and cut_unsafe):  # (the edge starts a later stage)
                need += 1
            if need > lo:
                lo = need
        hi = latest[v]
        if lo >= hi:
            final[v] = lo
            continue
        # Note [a candidate's cost from the operands' levels]: at level ``cand``, the operands'
        # bytes at other levels cross (an operand read over two edges counts twice), and ``v``'s
        # own bytes cross unless every fusible consumer sits at ``cand``. So a candidate's cost is
        # a constant less what it saves: the bytes of the operands made at ``cand`` and, at the
        # one level of all of ``v``'s consumers (``only_out``), ``v``'s bytes. No operand sits
        # above ``lo`` (``lo`` is the largest level an operand forces), so only ``lo`` and
        # ``only_out`` may save anything, every other candidate saves nothing, and the latest
        # level saving the most wins (the later one on ties; ``hi`` when nothing saves):
        # * ``lo < only_out <= hi``: ``only_out`` when ``v``'s bytes are at least the operands'
        #   at ``lo`` (and not zero), ``lo`` when they are fewer, ``hi`` when both are zero
        #   (``x[0]`` of an input, read at level 1 only: 1, without asking its size);
        # * otherwise: ``lo`` when it saves anything (operands at ``lo``, or ``v``'s bytes when
        #   ``only_out == lo``), else ``hi``.
        # Worked example, views bench: ``y = x[0] * 2`` between its operand's level 0 and the
        # ``return`` (no fusible consumer), levels 0-1: only level 0 saves (the row), so 0.
        only_out = only_level[v]
        if only_out is _MANY:
            only_out = None
        if only_out is not None and lo < only_out <= hi:
            at_lo = 0
            for u, _, _ in ins:
                if fusible[u] and final[u] == lo:
                    at_lo += size(u)
            if at_lo:
                final[v] = only_out if size(v) >= at_lo else lo
            else:  # (at ``hi`` either way when ``only_out`` is ``hi``: ``v``'s size not asked)
                final[v] = only_out if only_out < hi and size(v) else hi
            continue
        saves = only_out == lo and size(v) > 0
        if not saves:
            for u, _, _ in ins:
                if fusible[u] and final[u] == lo and size(u) > 0:
                    saves = True
                    break
        final[v] = lo if saves else hi
    return final


_MIN_CUT_MAX_NODES = 20_000
# Note [each node in the stage that moves the fewest elements] is a second sweep over the edges: a
# program cut into thousands of stages (the bench's aliased 100k-op chain) keeps its ASAP levels
_MAX_STAGES_TO_PLACE = 64
_MANY = object()  # (fusible consumers at more than one level)


def _first_in_edges(n: int, es: list) -> list[int]:
    """``first[v]:first[v + 1]``, the slice of ``es`` (grouped by head, heads ascending) that holds
    the edges into node ``v``; counted by ``collections.Counter`` and summed by ``accumulate``."""
    counts = collections.Counter(map(operator.itemgetter(1), es))
    return [0, *itertools.accumulate(map(counts.get, range(n), itertools.repeat(0, n)))]


def _level_after(level_u: int, fusible_u: bool, fusible_v: bool, cut: bool) -> int:
    """The least level of v given an edge u -> v: a fusible v after a non-fusible u, or across an
    unsafe hazard edge, starts a later stage; a non-fusible v only follows u."""
    if not fusible_v:
        return level_u
    if not fusible_u or cut:
        return level_u + 1
    return level_u


def _levels_node_by_node(n: int, graph: nx.DiGraph, fusible: list[bool], ignore_hazards: bool) -> list[int]:
    level = [-1] * n
    pred = graph.pred
    for v in range(n):
        lv = 0 if fusible[v] else -1
        for u, data in pred[v].items():
            lv = max(lv, _level_after(level[u], fusible[u], fusible[v], data["unsafe"] and not ignore_hazards))
        level[v] = lv
    return level


def partition(
    bsyms: Sequence[BoundSymbol],
    graph,
    is_fusible: Callable[[BoundSymbol], bool],
    *,
    ignore_hazards: bool = False,
) -> Partition:
    """Assign every fusible node a region (see module docstring)."""
    n = len(bsyms)
    built = isinstance(graph, DependencyEdges) and graph.n == n
    sym_ids = graph.sym_ids if built and graph.sym_ids is not None else [b.sym.id for b in bsyms]
    memory_views = destination_views(bsyms, graph.producer_idx if built else None, graph.copies if built else None)
    if built and graph.is_fusible is is_fusible and graph.opaque is not None:
        # what building the graph asked is_fusible already (the pass's own predicate)
        fusible = [not opaque for opaque in graph.opaque]
    else:
        fusible = [is_fusible(b) for b in bsyms]
    for i in memory_views:
        fusible[i] = False
    level = _levels(n, graph, fusible, ignore_hazards)
    if 0 < max(level, default=-1) <= _MAX_STAGES_TO_PLACE:
        if isinstance(graph, DependencyEdges):
            es, data = graph.in_node_order_list(), list(zip(graph.data_u, graph.data_v))
        else:
            es = sorted(((u, v, bool(d["unsafe"])) for u, v, d in graph.edges(data=True)), key=lambda e: e[1])
            data = [(u, v) for u, v, d in graph.edges(data=True) if "data" in d["kinds"]]
        level = _sunk_levels(bsyms, sym_ids, n, es, data, fusible, level, ignore_hazards)
    result = Partition()
    result.items = _in_order(bsyms, sym_ids, fusible, level, backward_nodes(bsyms, sym_ids), result.stage)
    return result


def _in_order(bsyms, sym_ids, fusible: list[bool], level: list[int], backward: set[int], stage: dict) -> list:
    """The partition's items in execution order (module docstring): per level, the forward
    stage's region, the backward one's (Note [forward and backward in one trace]), then the
    nodes outside regions of that level; ``return`` last. Fills ``stage`` (fusible node -> level).

    A stage made of view prims only produces no kernel: its nodes run on torch, one by one.
    The nodes of each bucket are collected in node order, so only the levels are sorted.
    """
    forward: dict[int, list[int]] = {}
    backward_stages: dict[int, list[int]] = {}
    outside: dict[int, list[int]] = {}
    returns: list[int] = []
    ret = prims.PrimIDs.RETURN
    for v, (lv, f) in enumerate(zip(level, fusible)):
        if f:
            stage[v] = lv
            stages = backward_stages if backward and v in backward else forward
        elif sym_ids[v] is ret:
            returns.append(v)
            continue
        else:
            stages = outside
        members = stages.get(lv)
        if members is None:
            stages[lv] = [v]
        else:
            members.append(v)
    last = max(max(forward, default=-1), max(backward_stages, default=-1))
    levels = {*forward, *backward_stages, *outside}
    if returns:
        levels.add(last + 1)
    phases = (forward, backward_stages) if backward_stages else (forward,)
    items: list[tuple[str, list[int]]] = []
    for s in sorted(levels):
        for stages in phases:
            members = stages.get(s)
            if members is None:
                continue
            for v in members:
                if id(sym_ids[v]) not in _VIEW_ADDRS:  # (ops.is_view)
                    items.append(("region", members))
                    break
            else:
                items.extend(("node", [v]) for v in members)
        members = outside.get(s)
        if members is not None:
            items.extend(("node", [v]) for v in members)
        if returns and s == last + 1:
            items.extend(("node", [v]) for v in returns)
    return items


_VIEW_ADDRS = frozenset(id(i) for i in ops.VIEW_IDS)  # ops' Note [prim lookups by identity]
