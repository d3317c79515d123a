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
from fusion_alias.aliasing import AliasInfo, flattened, may_write, shape_reader, tensor_args
from fusion_alias.view_relations import boxes_disjoint, view_box


def memory_reads(bsym: BoundSymbol) -> list[TensorProxy]:
    """Tensor arguments whose *memory* the symbol reads (do not mutate the list)."""
    info = ops.op_info(bsym)
    kind = info.kind if info is not None else None
    if kind == "elementwise":
        return tensor_args(bsym)
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
    """Tensor arguments whose memory the symbol writes (do not mutate the list)."""
    if bsym.sym.id is ops.COPY_ID:
        return [bsym.args[1]]
    if opaque and may_write(bsym):
        return tensor_args(bsym)
    return _NOTHING


_NOTHING: list = []  # (shared: most symbols write nothing)


def _shape(p: TensorProxy, shapes: dict) -> tuple:
    """``tuple(p.shape)``, remembered by name in ``shapes`` (``TensorProxy.shape`` is not free;
    ``shapes[None]`` holds the stage's ``aliasing.shape_reader()``)."""
    shape = shapes.get(p.name)
    if shape is None:
        shape = shapes[p.name] = shapes[None](p)
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

    Note [feeder sets are shared]: no entry is changed once stored, so a node fed
    by one producer only (an elementwise chain: ``tanh(tanh(tanh(a)))``) stores
    that producer's very set instead of a copy.
    """
    if b.sym.id is _SHALLOW_COPY:
        # the same elements at the same indices: feeds through (addcmul_ makes these)
        j = producer_idx.get(b.args[0].name)
        return feeders[j] if j is not None and feeders[j] else None
    if not isinstance(b.output, TensorProxy):
        return None
    acc = None
    owned = False  # whether acc is a set made here, or one of feeders' (never changed once stored)
    shape = None
    for a in tensor_args(b):
        name = a.name
        if reads_written(name):
            if not owned:
                acc, owned = (set(acc) if acc else set()), True
            acc.add(n)
        j = producer_idx.get(name)
        fed = feeders[j] if j is not None else None
        if fed and fed is not acc:
            shape = shape or shapes.get(b.output.name) or _shape(b.output, shapes)
            if (shapes.get(name) or _shape(a, shapes)) == shape:
                if acc is None:
                    acc = fed  # shared: Note [feeder sets are shared]
                else:
                    if not owned:
                        acc, owned = set(acc), True
                    acc |= fed
    return acc


# Hazard kinds, as bits of a hazard edge's code (``DependencyEdges.hazard_code``).
RAW, WAR, WAW, UNSAFE = 2, 4, 8, 16
_KIND_NAMES = ((RAW, "raw"), (WAR, "war"), (WAW, "waw"))


class DependencyEdges:
    """The dependency graph as arrays: data edge ``k`` goes from node ``data_u[k]`` to
    ``data_v[k]``; hazard edge ``k`` from ``hazard_u[k]`` to ``hazard_v[k]``, its kind and
    whether it is unsafe in ``hazard_code[k]`` (``RAW | WAR | WAW``, ``| UNSAFE``).

    Note [the graph as arrays]
    --------------------------
    The pass needs one algorithm on the graph, the partitioner's sweep over the
    edges in node order (partition.py, Note [levels in one sweep over the
    edges]); a ``networkx.DiGraph`` costs two dicts per node and a dict and a
    set per edge, built and freed again on every compile (a third of graph
    building and partitioning at 100k bsyms, and the garbage collector's time
    after the pass). So the pass keeps the edges as arrays of ints, each kind
    appended in node order of the heads (every edge goes forward: ``u < v``):
    :meth:`in_node_order` merges the two into the order the sweep needs, and
    :meth:`to_networkx` builds the ``DiGraph`` for those who want one
    (``Prepared.graph``: reports, pictures, the benchmarks' optimum search):
    the same graph, nodes, edges, ``kinds`` and ``unsafe`` attributes and
    iteration orders the pass built before (``tests/test_scale_equivalence.py``).
    A node pair may have a data edge and hazards, or several hazards;
    :meth:`to_networkx` merges them into one edge, and the sweep gets the same
    levels either way (a node's level is a maximum over its edges).
    """

    def __init__(self, n: int, is_fusible=None, opaque=None):
        self.n = n
        self.data_u: list[int] = []
        self.data_v: list[int] = []
        self.hazard_u: list[int] = []
        self.hazard_v: list[int] = []
        self.hazard_code: list[int] = []
        # what building found on the way, for the partitioner: the predicate it was built with,
        # ``not is_fusible(b)`` per node, and each name's first producer (a node index)
        self.is_fusible = is_fusible
        self.opaque: list[bool] | None = opaque
        self.producer_idx: dict[str, int] = {}

    def add(self, u: int, v: int, code: int) -> None:
        """A hazard edge (a data edge is appended to ``data_u``/``data_v`` by the builder)."""
        if u != v:
            self.hazard_u.append(u)
            self.hazard_v.append(v)
            self.hazard_code.append(code)

    def __len__(self) -> int:
        """The number of edges in the arrays (a pair joined twice counts twice)."""
        return len(self.data_u) + len(self.hazard_u)

    def in_node_order(self):
        """``(u, v, unsafe)`` for every edge of the arrays, heads ``v`` in ascending order."""
        du, dv, hu, hv, hc = self.data_u, self.data_v, self.hazard_u, self.hazard_v, self.hazard_code
        nd, nh = len(dv), len(hv)
        i = j = 0
        while i < nd:
            v = dv[i]
            while j < nh and hv[j] < v:
                yield hu[j], hv[j], hc[j] & UNSAFE
                j += 1
            yield du[i], v, 0
            i += 1
        while j < nh:
            yield hu[j], hv[j], hc[j] & UNSAFE
            j += 1

    def to_networkx(self) -> nx.DiGraph:
        """The graph as a ``DiGraph`` whose edges carry ``kinds`` (a set of kind names) and ``unsafe``.

        Data edges are inserted first, then hazards in the order they were found, as the
        pass built it before Note [the graph as arrays]; each edge's attribute dict is shared
        by ``succ[u][v]`` and ``pred[v][u]``, the layout ``DiGraph`` keeps, and installed
        through the ``_adj``/``_pred`` attributes, whose setters networkx provides for this.
        """
        succ: dict[int, dict] = {i: {} for i in range(self.n)}
        pred: dict[int, dict] = {i: {} for i in range(self.n)}
        for u, v in zip(self.data_u, self.data_v):
            succ[u][v] = pred[v][u] = {"kinds": {"data"}, "unsafe": False}
        for u, v, code in zip(self.hazard_u, self.hazard_v, self.hazard_code):
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
    us, vs = edges.data_u, edges.data_v
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
    group = info.group

    opaque = [not is_fusible(b) for b in bsyms]
    copy_id = ops.COPY_ID
    writes = [[b.args[1]] if b.sym.id is copy_id else memory_writes(b, op) if op else _NOTHING
              for b, op in zip(bsyms, opaque)]  # (memory_writes, its cheap cases inlined)
    written_groups = {group(d.name) for ds in writes if ds for d in ds}

    edges = DependencyEdges(len(bsyms), is_fusible, opaque)
    shapes: dict = {None: shape_reader()}
    producer_idx, feeders = _data_edges_and_feeders(
        bsyms, edges, lambda name: name in root and group(name) in written_groups, shapes
    )
    edges.producer_idx = producer_idx
    if not written_groups:
        return edges  # no write: no hazard

    add = edges.add
    last_write: dict[str, int] = {}
    reads_since: dict[str, list[tuple[int, TensorProxy]]] = {}
    # Note [elements moved from written memory]
    taint: list = [None] * len(bsyms)
    moves: list = []
    safe_readers: dict[int, list[int]] = {}  # a read of memory -> the writes of it that it feeds elementwise (safe wars)
    disjoint_chains: dict = {}  # group -> the writes since its last overlapping one, with their boxes
    op_by_addr, reshape = ops._OP_BY_ADDR, ops.PrimIDs.RESHAPE
    for i, b in enumerate(bsyms):
        # (memory_reads, inlined)
        op = op_by_addr.get(id(b.sym.id))
        kind = op.kind if op is not None else None
        if not opaque[i] and kind != "write" and kind != "alias":
            _taint_and_moves(i, b, kind, taint, producer_idx, root, group, written_groups, shapes, moves)
        if kind == "elementwise" or kind == "reduction" or kind is None or kind == "creation":
            reads = flattened(b)[3]  # the tensor arguments
        elif kind == "write":
            src = b.args[0]
            reads = (src,) if isinstance(src, TensorProxy) else ()
        elif kind == "view" and b.sym.id is reshape:
            reads = (b.args[0],)  # torch's reshape copies when the layout is not viewable: a read, conservatively
        else:  # other views, update_aliases
            reads = ()
        for p in reads:
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
        ds = writes[i]
        if ds:
            for d in ds:
                _add_write_hazards(i, b, d, opaque[i], bsyms, info, group(d.name), last_write, reads_since,
                                   producer_idx, feeders, shapes, add, safe_readers, disjoint_chains)
    if moves and safe_readers:
        _add_move_hazards(edges, moves, safe_readers)
    return edges


def _add_move_hazards(edges: DependencyEdges, moves: list, safe_readers: dict) -> None:
    """Note [elements moved from written memory]: the war edge from each reader whose value is
    moved to each write it feeds becomes unsafe; the hazard arrays stay in node order of the heads."""
    extra = sorted({(r, w) for _, readers in moves for r in readers for w in safe_readers.get(r, ())})
    if not extra:
        return
    code = RAW | UNSAFE
    merged = sorted(
        [*zip(edges.hazard_v, range(len(edges.hazard_v)), edges.hazard_u, edges.hazard_code),
         *((n, len(edges.hazard_v) + k, r, code) for k, (r, n) in enumerate(extra))]
    )
    edges.hazard_v = [v for v, _, _, _ in merged]
    edges.hazard_u = [u for _, _, u, _ in merged]
    edges.hazard_code = [c for _, _, _, c in merged]


def build_graph(
    bsyms: Sequence[BoundSymbol],
    info: AliasInfo,
    is_fusible: Callable[[BoundSymbol], bool],
) -> nx.DiGraph:
    """Dependency graph of ``bsyms`` (see module docstring), as a ``networkx.DiGraph``."""
    return build_edges(bsyms, info, is_fusible).to_networkx()


_MOVING_VIEWS = frozenset(id(i) for i in ops.VIEW_IDS if i is not ops.PrimIDs.SHALLOW_COPY)
_PAD = ops.PrimIDs.PAD


def _taint_and_moves(i, b, kind, taint, producer_idx, root, group, written_groups, shapes, moves) -> None:
    """Note [elements moved from written memory]
    --------------------------------------------
    Inside one kernel a value is not a buffer: nvFuser may compute
    ``exp(a)[0, 0]`` again from ``a[0, 0]`` wherever a thread needs it. So a
    region must not hold all three of: a read of memory M that feeds a write of
    M elementwise (a ``war`` edge the graph calls safe), a node that *moves*
    elements of a value computed from that read (slice, squeeze, permute,
    reshape, broadcast, reduce or pad it, or use a 0-dim one beside a bigger
    tensor), and the write: the thread that reads ``a[0, 0]`` for another
    element may run after the thread that wrote ``a[0, 0]``. Worked example,
    seed ``h`` after ``base_updates``::

        t2 = exp(a); copy_(t2, a)                  # exp reads a, feeds the write: safe
        t4 = tanh(squeeze(slice(t2)))              # slice moves a[0, 0] to t4's thread
        ...; copy_(where(m, pad(t4), t2), a)

    ``taint[i]``: the fusible nodes that read written memory and whose values
    node ``i``'s value was computed from (an op outside regions hands over a
    real buffer: no taint passes it). ``moves`` collects ``(node, readers whose
    values it moves)``; ``build_edges`` then makes the reader's war edge to each
    write it feeds unsafe: the read runs in an earlier region than the write
    (the kernel model's region A), and the write and the move read its value
    from a buffer. (Of the three, separating the read from the write keeps the
    most together: the move may still sit with either.)
    """
    sym_id = b.sym.id
    if kind == "view":
        a0 = b.args[0]
        j = producer_idx.get(a0.name) if isinstance(a0, TensorProxy) else None
        acc = taint[j] if j is not None else None
        moved = acc if id(sym_id) in _MOVING_VIEWS else None
    else:
        moving = kind == "reduction" or sym_id is _PAD
        out = b.output if isinstance(b.output, TensorProxy) else None
        acc = moved = None
        reads_written = False
        for p in flattened(b)[3]:
            name = p.name
            j = producer_idx.get(name)
            derived = taint[j] if j is not None else None  # a value computed from reads of written memory
            if name in root and group(name) in written_groups:
                reads_written = True
            if derived is not None:
                acc = derived if acc is None or acc is derived else acc | derived
                if moving or (out is not None and _shape(p, shapes) != _shape(out, shapes)):
                    moved = derived if moved is None else moved | derived
        if reads_written:
            acc = frozenset((i,)) if acc is None else acc | {i}
    taint[i] = acc
    if moved:
        moves.append((i, moved))


_MAX_DISJOINT_CHAIN = 16


def _add_write_hazards(i, b, d, opaque, bsyms, info, grp, last_write, reads_since, producer_idx, feeders, shapes, add,
                       safe_readers=None, disjoint_chains=None):
    """The ``waw`` and ``war`` edges into node ``i``, a write of ``d`` (group ``grp``)."""
    w = last_write.get(grp)
    coalesced = w is not None and not opaque and _covers(bsyms[w], b, info)
    # Note [writes into disjoint views]: two writes of one root that share no element
    # (``a[0]`` and ``a[1]``; base_updates.view_box) land in either order: a safe edge. Every
    # write of the chain is checked, not only the last (``a[0:2]``, ``a[4:6]``, then ``a[1:3]``).
    disjoint = False
    if w is not None and not coalesced and not opaque and bsyms[w].sym.id is ops.COPY_ID:
        chain = disjoint_chains.get(grp) if disjoint_chains is not None else None
        if chain is not None and len(chain) < _MAX_DISJOINT_CHAIN:
            box = view_box(info, d.name)
            disjoint = box is not None and all(
                info.root[n] == info.root[d.name] and boxes_disjoint(x, box) for n, x in chain)
            if disjoint:
                chain.append((d.name, box))
    if disjoint_chains is not None and not disjoint:
        # (after a coalesced write no chain: the next write is ordered after this one)
        box = view_box(info, d.name) if not opaque and not coalesced and b.sym.id is ops.COPY_ID else None
        disjoint_chains[grp] = [(d.name, box)] if box is not None else None
    if w is not None:
        add(w, i, WAW if coalesced or disjoint else WAW | UNSAFE)
    if not coalesced and not disjoint:
        # Reads before the previous write are ordered before it (war edges to
        # it); a new chain of writes starts here.
        reads_since[grp] = [(r, p) for r, p in reads_since.get(grp, ()) if w is None or r > w]
    # Note [coalesced writes keep their reads]: a covering write drops the
    # previous write-back, so a read that was safe only because it fed that
    # write is checked again against this one (``a.neg_(); a.zero_()``:
    # neg's read of a does not feed zero's write-back, which nvFuser may land first).
    since = reads_since.get(grp)
    if since:
        src = b.args[0] if b.sym.id is ops.COPY_ID else None
        j = producer_idx.get(src.name) if isinstance(src, TensorProxy) else None
        fed_by = feeders[j] if j is not None and feeders[j] is not None else ()
        view_key = info.view_key
        d_shape = src_fits = d_key = None  # computed at the first read that may be safe
        for r, p in since:
            if r == i:
                continue
            # (cheapest tests first: the conjunction has no side effects)
            safe = False
            if not opaque and r in fed_by:
                if d_shape is None:
                    d_shape = _shape(d, shapes)
                    src_fits = _shape(src, shapes) == d_shape
                if src_fits:
                    if d_key is None:
                        d_key = view_key[d.name]
                    safe = view_key[p.name] == d_key and _shape(p, shapes) == d_shape  # (info.same_view)
            add(r, i, WAR if safe else WAR | UNSAFE)
            if safe and safe_readers is not None:
                safe_readers.setdefault(r, []).append(i)
    last_write[grp] = i


def _covers(earlier: BoundSymbol, later: BoundSymbol, info: AliasInfo) -> bool:
    if earlier.sym.id is not ops.COPY_ID or later.sym.id is not ops.COPY_ID:
        return False
    d1, d2 = earlier.args[1].name, later.args[1].name
    if info.same_view(d1, d2):
        return True
    return info.is_whole(d2) and info.root[d1] == info.root[d2]
