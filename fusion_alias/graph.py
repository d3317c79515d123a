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


# Edge kinds, as bits of an edge's code (``DependencyEdges.codes``).
DATA, RAW, WAR, WAW, UNSAFE = 1, 2, 4, 8, 16
_KIND_NAMES = ((DATA, "data"), (RAW, "raw"), (WAR, "war"), (WAW, "waw"))


class DependencyEdges:
    """The dependency graph as three parallel arrays: edge ``k`` goes from node ``us[k]`` to
    ``vs[k]``, its kind and whether it is unsafe in ``codes[k]`` (``DATA | RAW | ... | UNSAFE`` bits).

    Note [the graph as arrays]
    --------------------------
    The pass needs one algorithm on the graph, the partitioner's sweep over the
    edges in node order (partition.py, Note [levels in one sweep over the
    edges]); a ``networkx.DiGraph`` costs two dicts per node and a dict and a
    set per edge, built and freed again on every compile (a third of graph
    building and partitioning at 100k bsyms, and the garbage collector's time
    after the pass). So the pass keeps the edges as arrays of ints, appended in
    node order of their heads (every edge goes forward: ``u < v``), and
    :meth:`to_networkx` builds the ``DiGraph`` for those who want one
    (``Prepared.graph``: reports, pictures, the benchmarks' optimum search):
    the same graph, nodes, edges, ``kinds`` and ``unsafe`` attributes and
    iteration orders the pass built before (``tests/test_scale_equivalence.py``).
    An edge may appear more than once in the arrays (a data edge and a hazard
    between the same two nodes); :meth:`to_networkx` merges them, and the
    sweep gets the same levels either way (a node's level is a maximum over its
    edges).
    """

    def __init__(self, n: int):
        self.n = n
        self.us: list[int] = []
        self.vs: list[int] = []
        self.codes: list[int] = []

    def add(self, u: int, v: int, code: int) -> None:
        if u != v:
            self.us.append(u)
            self.vs.append(v)
            self.codes.append(code)

    def to_networkx(self) -> nx.DiGraph:
        """The graph as a ``DiGraph`` whose edges carry ``kinds`` (a set of kind names) and ``unsafe``.

        Data edges are inserted first, then hazards in the order they were found, as the
        pass built it before Note [the graph as arrays]; each edge's attribute dict is shared
        by ``succ[u][v]`` and ``pred[v][u]``, the layout ``DiGraph`` keeps, and installed
        through the ``_adj``/``_pred`` attributes, whose setters networkx provides for this.
        """
        succ: dict[int, dict] = {i: {} for i in range(self.n)}
        pred: dict[int, dict] = {i: {} for i in range(self.n)}
        edges = list(zip(self.us, self.vs, self.codes))
        for u, v, code in edges:
            if code == DATA:
                succ[u][v] = pred[v][u] = {"kinds": {"data"}, "unsafe": False}
        for u, v, code in edges:
            if code == DATA:
                continue
            kind = next(name for bit, name in _KIND_NAMES if code & bit)
            unsafe = bool(code & UNSAFE)
            data = succ[u].get(v)
            if data is None:
                succ[u][v] = pred[v][u] = {"kinds": {kind}, "unsafe": unsafe}
            else:
                data["kinds"].add(kind)
                data["unsafe"] = data["unsafe"] or unsafe
        g = nx.DiGraph()
        g._node = {i: {} for i in range(self.n)}  # what add_nodes_from stores: no attributes
        g._adj = succ  # (networkx's setter also points _succ here)
        g._pred = pred
        return g


def _data_edges_and_feeders(bsyms, edges: DependencyEdges, reads_written, shapes: dict) -> tuple[dict[str, int], list]:
    """Add a ``data`` edge from each producer to each consumer; return name → first
    producer, and each node's feeders (:func:`_feeder_set`).

    One forward pass, each bsym's outputs registered after its arguments are
    looked up: a name then resolves to its first producer exactly when that
    producer comes earlier, the only edges kept and the only feeder entries
    already computed.
    """
    producer_idx: dict[str, int] = {}
    feeders: list = [None] * len(bsyms)
    us, vs, codes = edges.us, edges.vs, edges.codes
    get = producer_idx.get
    elementwise = _ELEMENTWISE_ADDRS
    for i, b in enumerate(bsyms):
        _, args, outs, _, _ = flattened(b)
        start = len(us)  # the edges into node i are us[start:]: one per producer
        for a in args:
            j = get(a.name)
            if j is not None and (len(us) == start or j not in us[start:]):
                us.append(j)
                vs.append(i)
                codes.append(DATA)
        sym_id = b.sym.id
        if sym_id is _SHALLOW_COPY or id(sym_id) in elementwise:  # the others have no feeders
            feeders[i] = _feeder_set(i, b, feeders, producer_idx, reads_written, shapes)
        for o in outs:
            if o.name not in producer_idx:
                producer_idx[o.name] = i
    return producer_idx, feeders


def build_edges(
    bsyms: Sequence[BoundSymbol],
    info: AliasInfo,
    is_fusible: Callable[[BoundSymbol], bool],
) -> DependencyEdges:
    """Dependency graph of ``bsyms`` (see module docstring), as arrays (Note [the graph as arrays])."""
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

    edges = DependencyEdges(len(bsyms))
    shapes: dict[str, tuple] = {}
    producer_idx, feeders = _data_edges_and_feeders(
        bsyms, edges, lambda name: name in root and group(name) in written_groups, shapes
    )
    if not written_groups:
        return edges  # no write: no hazard

    add = edges.add
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
                add(w, i, RAW | UNSAFE)
            since = reads_since.get(grp)
            if since is None:
                reads_since[grp] = [(i, p)]
            else:
                since.append((i, p))
        for d in writes[i]:
            _add_write_hazards(i, b, d, opaque[i], bsyms, info, group(d.name), last_write, reads_since,
                               producer_idx, feeders, shapes, add)
    return edges


def build_graph(
    bsyms: Sequence[BoundSymbol],
    info: AliasInfo,
    is_fusible: Callable[[BoundSymbol], bool],
) -> nx.DiGraph:
    """Dependency graph of ``bsyms`` (see module docstring), as a ``networkx.DiGraph``."""
    return build_edges(bsyms, info, is_fusible).to_networkx()


def _add_write_hazards(i, b, d, opaque, bsyms, info, grp, last_write, reads_since, producer_idx, feeders, shapes, add):
    """The ``waw`` and ``war`` edges into node ``i``, a write of ``d`` (group ``grp``)."""
    w = last_write.get(grp)
    coalesced = w is not None and not opaque and _covers(bsyms[w], b, info)
    if w is not None:
        add(w, i, WAW if coalesced else WAW | UNSAFE)
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
        add(r, i, WAR if safe else WAR | UNSAFE)
    last_write[grp] = i


def _covers(earlier: BoundSymbol, later: BoundSymbol, info: AliasInfo) -> bool:
    if not (ops.is_copy(earlier) and ops.is_copy(later)):
        return False
    d1, d2 = earlier.args[1].name, later.args[1].name
    if info.same_view(d1, d2):
        return True
    return info.is_whole(d2) and info.root[d1] == info.root[d2]
