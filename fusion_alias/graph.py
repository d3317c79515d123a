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
from fusion_alias.data_edges import FEW_ARGS, data_edges, edges_from_producers
from fusion_alias.dependency_edges import ORDER, RAW, UNSAFE, WAR, WAW, DependencyEdges
from fusion_alias.random_draws import draw_order_pairs
from fusion_alias.trace_writes import Dest, trace_writes
from fusion_alias.view_relations import boxes_disjoint


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
_SHALLOW_COPY = ops.PrimIDs.SHALLOW_COPY
_MOVING_VIEWS = frozenset(id(i) for i in ops.VIEW_IDS if i is not ops.PrimIDs.SHALLOW_COPY)
_PAD = ops.PrimIDs.PAD
_RESHAPE = ops.PrimIDs.RESHAPE
_MAX_DISJOINT_CHAIN = 16
_UNSEEN = object()  # (a name not yet looked up in a cache whose answers include None)


def build_edges(
    bsyms: Sequence[BoundSymbol],
    info: AliasInfo,
    is_fusible: Callable[[BoundSymbol], bool],
) -> DependencyEdges:
    """Dependency graph of ``bsyms`` (see module docstring), as arrays (dependency_edges.py, Note [the graph as arrays]).

    Note [the graph in one walk]
    ----------------------------
    One look at the whole trace first (:func:`trace_writes.trace_writes`): which nodes may join a
    region, what each writes, and so which memory groups the trace writes (a
    read of memory no one writes orders against nothing). Then one forward walk
    (:func:`_walk`) does the rest, each node's outputs registered after its
    arguments are looked up (a name resolves to its first producer exactly when
    that producer comes earlier, the only edges kept): data edges, feeder sets,
    taint and moves, ``raw`` edges into reads and ``waw``/``war`` edges into
    writes (:class:`_Hazards`). A tensor argument's name, producer and written
    group (None: memory no one writes) are looked up once and serve all of
    them, and a written name's facts (group, view, root) once per trace.
    """
    n = len(bsyms)
    opaque: list[bool] = [False] * n
    sym_ids: list = [None] * n
    copies: list[int] = []
    copy_id = ops.COPY_ID
    for i, b in enumerate(bsyms):  # (one look at each symbol for all three: Note [the graph in one walk])
        sym_ids[i] = sym_id = b.sym.id
        if sym_id is copy_id:
            copies.append(i)
        if not is_fusible(b):
            opaque[i] = True
    edges = DependencyEdges(n, is_fusible, opaque)
    edges.sym_ids, edges.copies = sym_ids, copies
    writes, written_group = trace_writes(bsyms, sym_ids, opaque, edges.copies, info)
    if not written_group:
        edges.producer_idx = data_edges(bsyms, edges)  # no write: no hazard
    else:
        _walk(bsyms, info, edges, writes, written_group)
    edges.insert_hazards(draw_order_pairs(bsyms, opaque), ORDER)  # Note [random draws in program order]
    return edges


# Note [a value's written group, kept by its producer]
# ----------------------------------------------------
# Each tensor argument of an elementwise op, reduction or creation asks its memory group, when the trace
# writes that memory (``written_group``: None for memory nobody writes). Remembered in a dict by name, that
# was a lookup in a table of every name read (100k on the bench's 100k ``views`` trace), a few cache misses
# each. Most arguments are the first output of an earlier node (``first_out[j] is name``: the very string
# the producer's proxy holds), so the answer is kept in a list by that node instead; any other name
# (a trace input, a later output of a node) still goes through the dict. The answer is the same either
# way: ``trace_writes`` seeds the dict with the written names and their groups, which ``group`` gives too.


def _walk(bsyms, info: AliasInfo, edges: DependencyEdges, writes: list, written_group: dict) -> None:
    """Note [the graph in one walk], when the trace writes memory.

    Note [feeder sets]
    ------------------
    ``feeders[i]``, for an elementwise op or a shallow copy: the memory-reading
    elementwise nodes that feed node ``i`` through elementwise ops of one shape
    (a shallow copy holds the same elements at the same indices: it feeds
    through what feeds its argument; addcmul_ makes these). Each set only holds
    reads of written memory, so it stays small (after substitution most reads
    of written memory are gone). A read feeding the write of the very view it
    reads is a safe ``war`` (module docstring).

    Note [empty feeder sets are None]: an empty set and None answer every
    question asked of a feeder entry alike (nothing feeds through, ``r in`` is
    False), so empty sets are stored as None, and a node none of whose
    arguments reads written memory or is fed costs no shape comparison.

    Note [feeder sets are shared]: no entry is changed once stored, so a node fed
    by one producer only (an elementwise chain: ``tanh(tanh(tanh(a)))``) stores
    that producer's very set instead of a copy.

    Note [elements moved from written memory]
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
    n = len(bsyms)
    opaque = edges.opaque
    root, group = info.root, info.group
    written_groups = set(written_group.values())
    producer_idx: dict[str, int] = {}
    get = producer_idx.get
    us, vs = edges.data_u, edges.data_v
    hu, hv, hc = edges.hazard_u, edges.hazard_v, edges.hazard_code
    shape_of = shape_reader()
    feeders: list = [None] * n
    taint: list = [None] * n
    moves: list = []
    hazards = _Hazards(info, edges, feeders, shape_of)
    last, reads_since = hazards.last, hazards.reads_since
    kind_of = _KIND_BY_ADDR

    def written_of(name: str) -> str | None:
        """The memory group of ``name`` when the trace writes it, else None."""
        grp = group(name) if name in root else None
        return grp if grp in written_groups else None

    def written_group_of(name: str) -> str | None:
        """``written_of(name)``, remembered in ``written_group``."""
        grp = written_group[name] = written_of(name)
        return grp

    out_group: list = [_UNSEEN] * n  # per node: its first output's ``written_of`` (_UNSEEN: not asked yet)

    sym_ids = edges.sym_ids
    copy_id = ops.COPY_ID
    arg_producer, arg_name, arg_start = edges.arg_producer, edges.arg_name, edges.arg_start
    node_entry, first_out = edges.node_entry, edges.first_out
    add_producer, add_name = arg_producer.append, arg_name.append
    for i, b in enumerate(bsyms):
        entry = flattened(b)
        _, args, outs, targs, _ = entry
        sym_id = sym_ids[i]
        kind = kind_of.get(id(sym_id))
        start = len(us)  # the edges into node i are us[start:]: one per producer
        reads_args = kind != "view" and kind != "write" and kind != "alias"
        if len(args) > FEW_ARGS:
            edges_from_producers(args, get, us, vs, i, arg_producer, arg_name)
            edges_added = True
        elif not reads_args or len(targs) != len(args):
            for a in args:
                name = a._name
                j = get(name)
                add_producer(j)
                add_name(name)
                if j is not None and (len(us) == start or j not in us[start:]):
                    us.append(j)
                    vs.append(i)
            edges_added = True
        else:
            edges_added = False  # (the loop below adds them: every argument is a tensor)
        if kind == "write":
            src = b.args[0]
            src_producer = None
            if isinstance(src, TensorProxy):
                name = src._name
                src_producer = get(name)
                grp = written_group.get(name, _UNSEEN)
                if grp is _UNSEEN:
                    grp = written_group_of(name)
                if grp is not None:
                    hazards.read(i, src, grp)
        elif not reads_args:  # a view, update_aliases
            if sym_id is _SHALLOW_COPY:
                j = get(b.args[0]._name)
                feeders[i] = feeders[j] if j is not None else None  # Note [feeder sets]
            if kind == "view" and not opaque[i]:
                a0 = b.args[0]
                j = get(a0._name) if isinstance(a0, TensorProxy) else None
                taint[i] = acc = taint[j] if j is not None else None
                if acc and id(sym_id) in _MOVING_VIEWS:
                    moves.append((i, acc))
            if sym_id is _RESHAPE:  # torch's reshape copies when the layout is not viewable: a read, conservatively
                p = b.args[0]
                grp = written_group.get(p._name, _UNSEEN)
                if grp is _UNSEEN:
                    grp = written_group_of(p._name)
                if grp is not None:
                    hazards.read(i, p, grp)
        elif targs:
            # elementwise ops, reductions, creations, unknown symbols: each tensor argument is
            # a read of memory (memory_reads), feeds (Note [feeder sets]) and taints
            out = b.output
            if not isinstance(out, TensorProxy):
                out = None
            feeds = out is not None and kind == "elementwise"
            taints = not opaque[i]
            fed_acc = None
            owned = False  # whether fed_acc is a set made here, or one of feeders' (Note [feeder sets are shared])
            out_shape = None
            taint_acc = moved = None
            reads_written = False
            for p in targs:
                name = p._name
                j = get(name)
                if not edges_added:  # (targs is args: the arguments in order)
                    add_producer(j)
                    add_name(name)
                    if j is not None and (len(us) == start or j not in us[start:]):
                        us.append(j)
                        vs.append(i)
                if j is not None and first_out[j] is name:  # Note [a value's written group, kept by its producer]
                    grp = out_group[j]
                    if grp is _UNSEEN:
                        grp = out_group[j] = written_of(name)
                else:
                    grp = written_group.get(name, _UNSEEN)
                    if grp is _UNSEEN:
                        grp = written_group_of(name)
                if grp is not None:  # a read of written memory: after the last write (raw), before the next
                    reads_written = True
                    lw = last.get(grp)
                    if lw is not None:
                        hu.append(lw[0])
                        hv.append(i)
                        hc.append(RAW | UNSAFE)
                    since = reads_since.get(grp)
                    if since is None:
                        reads_since[grp] = [(i, p)]
                    else:
                        since.append((i, p))
                    if feeds:
                        if not owned:
                            fed_acc, owned = (set(fed_acc) if fed_acc else set()), True
                        fed_acc.add(i)
                if j is None:
                    continue
                if feeds:
                    fed = feeders[j]
                    if fed and fed is not fed_acc:
                        if out_shape is None:
                            out_shape = shape_of(out)
                        if shape_of(p) == out_shape:
                            if fed_acc is None:
                                fed_acc = fed  # shared: Note [feeder sets are shared]
                            else:
                                if not owned:
                                    fed_acc, owned = set(fed_acc), True
                                fed_acc |= fed
                if taints:
                    derived = taint[j]  # a value computed from reads of written memory
                    if derived is not None:
                        taint_acc = derived if taint_acc is None or taint_acc is derived else taint_acc | derived
                        if kind == "reduction" or sym_id is _PAD or (out is not None and shape_of(p) != shape_of(out)):
                            moved = derived if moved is None else moved | derived
            if feeds:
                feeders[i] = fed_acc
            if taints:
                if reads_written:
                    taint_acc = frozenset((i,)) if taint_acc is None else taint_acc | {i}
                taint[i] = taint_acc
                if moved:
                    moves.append((i, moved))
        node_entry.append(entry)
        arg_start.append(len(arg_producer))
        first_out.append(outs[0]._name if outs else None)
        ds = writes[i]
        if ds is not None:
            for d, dest in ds:
                if sym_id is copy_id:
                    hazards.write(i, b, d, dest, opaque[i], True, src_producer)
                else:
                    hazards.write(i, b, d, dest, opaque[i], False, None)
        for o in outs:
            name = o._name
            if name not in producer_idx:
                producer_idx[name] = i
    edges.producer_idx = producer_idx
    if moves and hazards.safe_readers:
        _add_move_hazards(edges, moves, hazards.safe_readers)


_KIND_BY_ADDR = {addr: op.kind for addr, op in ops._OP_BY_ADDR.items()}  # ops' Note [prim lookups by identity]


class _Hazards:
    """The ``raw`` edges into reads of written memory and the ``waw`` and ``war`` edges
    into writes, as the walk meets them (Note [the graph in one walk]; the walk adds the
    ``raw`` edges of elementwise ops itself, as :meth:`read` does).

    Per memory group: ``last``, its last write and that write's :class:`Dest` when it is
    a ``copy_`` (else None); ``reads_since``, the reads since then (node order, each
    ``(node, tensor read)``); ``disjoint_chains``, the writes since its last overlapping one.
    """

    def __init__(self, info: AliasInfo, edges: DependencyEdges, feeders: list, shape_of):
        self.info = info
        self.edges = edges
        self.hu, self.hv, self.hc = edges.hazard_u, edges.hazard_v, edges.hazard_code  # (appended to only)
        self.feeders = feeders
        self.shape_of = shape_of
        self.last: dict[str, tuple[int, Dest | None]] = {}
        self.reads_since: dict[str, list[tuple[int, TensorProxy]]] = {}
        self.safe_readers: dict[int, list[int]] = {}  # a read of memory -> the writes of it that it feeds elementwise (safe wars)
        self.disjoint_chains: dict[str, list | None] = {}  # group -> [(Dest, box)]

    def read(self, i: int, p: TensorProxy, grp: str) -> None:
        """A read of ``p`` at node ``i``, memory of the written group ``grp`` (a read of memory no
        one writes has nothing to order it against: it would only sit in reads_since)."""
        lw = self.last.get(grp)
        if lw is not None:
            self.edges.add(lw[0], i, RAW | UNSAFE)
        since = self.reads_since.get(grp)
        if since is None:
            self.reads_since[grp] = [(i, p)]
        else:
            since.append((i, p))

    def write(self, i: int, b: BoundSymbol, d: TensorProxy, dest: Dest, opaque: bool, is_copy: bool,
              src_producer: int | None) -> None:
        """The ``waw`` and ``war`` edges into node ``i``, a write of ``d`` (``src_producer``: the
        producer of what a ``copy_`` writes, if any)."""
        grp = dest.group
        lw = self.last.get(grp)
        w, earlier = lw if lw is not None else (None, None)  # (earlier: the last write's Dest, if a copy_)
        # the later write covers the earlier one (Note [which hazards are safe inside a region]): the same view, or the whole family
        coalesced = (not opaque and is_copy and earlier is not None
                     and (earlier.key == dest.key or (dest.whole and earlier.root == dest.root)))
        # Note [writes into disjoint views]: two writes of one root that share no element
        # (``a[0]`` and ``a[1]``; base_updates.view_box) land in either order: a safe edge. Every
        # write of the chain is checked, not only the last (``a[0:2]``, ``a[4:6]``, then ``a[1:3]``).
        disjoint = False
        if earlier is not None and not coalesced and not opaque:
            chain = self.disjoint_chains.get(grp)
            if chain is not None and len(chain) < _MAX_DISJOINT_CHAIN:
                box = dest.box
                disjoint = box is not None and all(
                    x.root == dest.root and boxes_disjoint(x_box, box) for x, x_box in chain)
                if disjoint:
                    chain.append((dest, box))
        if not disjoint:
            # (after a coalesced write no chain: the next write is ordered after this one)
            box = dest.box if not opaque and not coalesced and is_copy else None
            self.disjoint_chains[grp] = [(dest, box)] if box is not None else None
        hu, hv, hc = self.hu, self.hv, self.hc
        if w is not None and w != i:
            hu.append(w)
            hv.append(i)
            hc.append(WAW if coalesced or disjoint else WAW | UNSAFE)
        since = self.reads_since.get(grp)
        if since and w is not None and not coalesced and not disjoint:
            # Reads before the previous write are ordered before it (war edges to
            # it); a new chain of writes starts here. (since is in node order.)
            k = 0
            while k < len(since) and since[k][0] <= w:
                k += 1
            if k:
                since = self.reads_since[grp] = since[k:]
        # Note [coalesced writes keep their reads]: a covering write drops the
        # previous write-back, so a read that was safe only because it fed that
        # write is checked again against this one (``a.neg_(); a.zero_()``:
        # neg's read of a does not feed zero's write-back, which nvFuser may land first).
        if since:
            src = b.args[0] if is_copy else None
            j = src_producer if isinstance(src, TensorProxy) else None
            fed_by = self.feeders[j] if j is not None and self.feeders[j] is not None else ()
            shape_of = self.shape_of
            d_shape = src_fits = None  # computed at the first read that may be safe
            for r, p in since:
                if r == i:
                    continue
                # (cheapest tests first: the conjunction has no side effects)
                safe = False
                if not opaque and r in fed_by:
                    if d_shape is None:
                        d_shape = shape_of(d)
                        src_fits = shape_of(src) == d_shape
                    if src_fits:
                        view_key = self.info.view_key
                        safe = view_key[p._name] == dest.key and shape_of(p) == d_shape  # (info.same_view)
                hu.append(r)
                hv.append(i)
                if safe:
                    hc.append(WAR)
                    self.safe_readers.setdefault(r, []).append(i)
                else:
                    hc.append(WAR | UNSAFE)
        self.last[grp] = (i, dest if is_copy else None)


def _add_move_hazards(edges: DependencyEdges, moves: list, safe_readers: dict) -> None:
    """Note [elements moved from written memory]: the war edge from each reader whose value is
    moved to each write it feeds becomes unsafe; the hazard arrays stay in node order of the heads."""
    edges.insert_hazards(sorted({(r, w) for _, readers in moves for r in readers for w in safe_readers.get(r, ())}),
                         RAW | UNSAFE)


def build_graph(
    bsyms: Sequence[BoundSymbol],
    info: AliasInfo,
    is_fusible: Callable[[BoundSymbol], bool],
) -> nx.DiGraph:
    """Dependency graph of ``bsyms`` (see module docstring), as a ``networkx.DiGraph``."""
    return build_edges(bsyms, info, is_fusible).to_networkx()


