"""The dependency graph: data edges plus alias hazard edges, over bound symbols.

Nodes are positions in the (flattened, substituted) bsym list. Edges carry a
``kinds`` set drawn from ``data``, ``raw``, ``war`` and ``waw`` and, for hazard
edges, ``unsafe``: True when the two ends may not share a fusion region
(DESIGN.md §4, rules 2-4).

Note [which hazards are safe inside a region]
---------------------------------------------
* ``raw``: never. After read substitution a remaining read of written memory
  must see the write land, which inside nvFuser it does not.
* ``war``: safe only when the read is an elementwise op on the very view being
  written, at the same index, and feeds the write through elementwise ops of
  the same shape: ``copy_(exp(a), a)`` is fine (each thread reads a[i] then
  writes a[i]); ``y = a.sum(); copy_(exp(a), a)`` is not, since nvFuser may
  run the write-back kernel before the reduction kernel (they are not
  connected by data).
* ``waw``: safe when the later write covers the earlier one (same view, or the
  whole family): the writes are coalesced into one write-back of the final
  value. ``a.exp_().add_(1)`` is one write-back; ``a.exp_(); a[0].zero_()``
  is two overlapping write-backs nvFuser could land in either order.

Edges are added between consecutive accesses of a group only (last write →
read, reads since the last write → write, last write → write); legality of a
region over the rest follows from acyclicity.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import networkx as nx
from thunder.core.proxies import TensorProxy
from thunder.core.symbol import BoundSymbol

from fusion_alias import ops
from fusion_alias.aliasing import AliasInfo, flattened, may_write, tensor_args


def memory_reads(bsym: BoundSymbol) -> list[TensorProxy]:
    """Tensor arguments whose *memory* the symbol reads (do not mutate the list)."""
    info = ops.op_info(bsym)
    kind = info.kind if info is not None else None
    if kind == "view":
        if bsym.sym.id is ops.PrimIDs.RESHAPE:
            # torch's reshape copies when the layout is not viewable: a read, conservatively
            return [bsym.args[0]]
        return []
    if kind == "alias":
        return []
    if kind == "write":
        src = bsym.args[0]
        return [src] if isinstance(src, TensorProxy) else []
    return tensor_args(bsym)


def memory_writes(bsym: BoundSymbol, opaque: bool) -> list[TensorProxy]:
    if ops.is_copy(bsym):
        return [bsym.args[1]]
    if opaque and may_write(bsym):
        return tensor_args(bsym)
    return []


def _shape(p: TensorProxy, shapes: dict) -> tuple:
    """``tuple(p.shape)``, remembered by name in ``shapes`` (``TensorProxy.shape`` is not free)."""
    shape = shapes.get(p.name)
    if shape is None:
        shape = shapes[p.name] = tuple(p.shape)
    return shape


_ELEMENTWISE_ADDRS = frozenset(id(i) for i in ops.ELEMENTWISE_IDS)  # ops' Note [prim lookups by identity]
_SHALLOW_COPY = ops.PrimIDs.SHALLOW_COPY


def _feeder_set(n: int, b: BoundSymbol, feeders: list, producer_idx: dict, reads_written, shapes: dict):
    """``feeders[n]``: the memory-reading elementwise nodes that feed node ``n``
    (an elementwise op or a shallow copy) through elementwise ops of one shape.

    ``feeders`` holds the entries of the nodes before ``n``; ``reads_written(name)``
    says whether reading ``name`` reads memory the trace writes. Each set only
    holds reads of written memory, so it stays small (after substitution most
    reads of written memory are gone).

    Note [empty feeder sets are None]: an empty set and None answer every
    question asked of a feeder entry alike (nothing feeds through, ``r in`` is
    False), so empty sets are stored as None, and a node none of whose
    arguments reads written memory or is fed costs no shape comparison.
    """
    if b.sym.id is _SHALLOW_COPY:
        # the same elements at the same indices: feeds through (addcmul_ makes these)
        j = producer_idx.get(b.args[0].name)
        return set(feeders[j]) if j is not None and feeders[j] else None
    if not isinstance(b.output, TensorProxy):
        return None
    acc = None
    shape = None
    for a in tensor_args(b):
        name = a.name
        if reads_written(name):
            acc = acc or set()
            acc.add(n)
        j = producer_idx.get(name)
        if j is not None and feeders[j]:
            shape = shape or shapes.get(b.output.name) or _shape(b.output, shapes)
            if (shapes.get(name) or _shape(a, shapes)) == shape:
                acc = acc or set()
                acc |= feeders[j]
    return acc


class _Edges:
    """Edges with their ``kinds`` and ``unsafe`` attributes, kept as networkx keeps them.

    Note [adjacency built in place]: ``DiGraph.add_edges_from`` copies every
    edge's attribute dict into a new one and re-checks both ends: a third of
    graph building at 100k bsyms. Here each edge's dict is made once and
    shared by ``succ[u][v]`` and ``pred[v][u]``, the layout ``DiGraph`` keeps,
    and :meth:`graph` installs the two maps through the ``_adj``/``_pred``
    attributes, whose setters networkx provides for this (they reset its
    cached views). Nodes and edges are inserted in the order ``add_nodes_from``
    then ``add_edges_from`` would have used, so even iteration orders agree;
    ``tests/test_scale_equivalence.py`` compares the two constructions.
    """

    def __init__(self, n: int):
        self.n = n
        self.succ: dict[int, dict] = {i: {} for i in range(n)}
        self.pred: dict[int, dict] = {i: {} for i in range(n)}

    def add(self, u: int, v: int, kind: str, unsafe: bool = False) -> None:
        if u == v:
            return
        out = self.succ[u]
        data = out.get(v)
        if data is None:
            out[v] = self.pred[v][u] = {"kinds": {kind}, "unsafe": unsafe}
        else:
            data["kinds"].add(kind)
            data["unsafe"] = data["unsafe"] or unsafe

    def graph(self) -> nx.DiGraph:
        g = nx.DiGraph()
        g._node = {i: {} for i in range(self.n)}  # what add_nodes_from stores: no attributes
        g._adj = self.succ  # (networkx's setter also points _succ here)
        g._pred = self.pred
        return g


def _data_edges_and_feeders(bsyms, edges: _Edges, reads_written, shapes: dict) -> tuple[dict[str, int], list]:
    """Add a ``data`` edge from each producer to each consumer; return name → first
    producer, and each node's feeders (:func:`_feeder_set`).

    One forward pass, each bsym's outputs registered after its arguments are
    looked up: a name then resolves to its first producer exactly when that
    producer comes earlier, the only edges kept and the only feeder entries
    already computed.
    """
    producer_idx: dict[str, int] = {}
    feeders: list = [None] * len(bsyms)
    succ, pred = edges.succ, edges.pred
    for i, b in enumerate(bsyms):
        _, args, outs, _, _ = flattened(b)
        into = pred[i]
        for a in args:
            j = producer_idx.get(a.name)
            if j is not None and j not in into:  # (edges.add, inlined: the first edges of node i)
                succ[j][i] = into[j] = {"kinds": {"data"}, "unsafe": False}
        sym_id = b.sym.id
        if sym_id is _SHALLOW_COPY or id(sym_id) in _ELEMENTWISE_ADDRS:  # the others have no feeders
            feeders[i] = _feeder_set(i, b, feeders, producer_idx, reads_written, shapes)
        for o in outs:
            producer_idx.setdefault(o.name, i)
    return producer_idx, feeders


def build_graph(
    bsyms: Sequence[BoundSymbol],
    info: AliasInfo,
    is_fusible: Callable[[BoundSymbol], bool],
) -> nx.DiGraph:
    """Dependency graph of ``bsyms`` (see module docstring)."""
    root = info.root
    group_of: dict[str, str] = {}  # name -> memory group: the groups are final here

    def group(name: str) -> str:
        g = group_of.get(name)
        if g is None:
            g = group_of[name] = info.group(name)
        return g

    opaque = [not is_fusible(b) for b in bsyms]
    writes = [memory_writes(b, op) for b, op in zip(bsyms, opaque)]
    written_groups = {group(d.name) for ds in writes for d in ds}

    edges = _Edges(len(bsyms))
    add = edges.add
    shapes: dict[str, tuple] = {}
    producer_idx, feeders = _data_edges_and_feeders(
        bsyms, edges, lambda name: name in root and group(name) in written_groups, shapes
    )

    last_write: dict[str, int] = {}
    reads_since: dict[str, list[tuple[int, TensorProxy]]] = {}
    for i, b in enumerate(bsyms):
        for p in memory_reads(b):
            name = p.name
            if name not in root:
                continue
            grp = group(name)
            if grp not in written_groups:
                continue  # no write to order it against: it would only sit in reads_since
            w = last_write.get(grp)
            if w is not None:
                add(w, i, "raw", unsafe=True)
            since = reads_since.get(grp)
            if since is None:
                reads_since[grp] = [(i, p)]
            else:
                since.append((i, p))
        for d in writes[i]:
            _add_write_hazards(i, b, d, opaque[i], bsyms, info, group(d.name), last_write, reads_since,
                               producer_idx, feeders, shapes, add)
    return edges.graph()


def _add_write_hazards(i, b, d, opaque, bsyms, info, grp, last_write, reads_since, producer_idx, feeders, shapes, add):
    """The ``waw`` and ``war`` edges into node ``i``, a write of ``d`` (group ``grp``)."""
    w = last_write.get(grp)
    coalesced = w is not None and not opaque and _covers(bsyms[w], b, info)
    if w is not None:
        add(w, i, "waw", unsafe=not coalesced)
    if not coalesced:
        # Reads before the previous write are ordered before it (war edges to
        # it); a new chain of writes starts here.
        reads_since[grp] = [(r, p) for r, p in reads_since.get(grp, ()) if w is None or r > w]
    # Note [coalesced writes keep their reads]: a covering write drops the
    # previous write-back, so a read that was safe only because it fed that
    # write is checked again against this one (``a.neg_(); a.zero_()``:
    # neg's read of a does not feed zero's write-back, which nvFuser may land first).
    src = b.args[0] if ops.is_copy(b) else None
    j = producer_idx.get(src.name) if isinstance(src, TensorProxy) else None
    fed_by = feeders[j] if j is not None and feeders[j] is not None else ()
    for r, p in reads_since.get(grp, ()):
        if r == i:
            continue
        # (cheapest tests first: the conjunction has no side effects)
        safe = (
            not opaque
            and r in fed_by
            and _shape(src, shapes) == _shape(d, shapes)
            and info.same_view(p.name, d.name)
            and _shape(p, shapes) == _shape(d, shapes)
        )
        add(r, i, "war", unsafe=not safe)
    last_write[grp] = i


def _covers(earlier: BoundSymbol, later: BoundSymbol, info: AliasInfo) -> bool:
    if not (ops.is_copy(earlier) and ops.is_copy(later)):
        return False
    d1, d2 = earlier.args[1].name, later.args[1].name
    if info.same_view(d1, d2):
        return True
    return info.is_whole(d2) and info.root[d1] == info.root[d2]
