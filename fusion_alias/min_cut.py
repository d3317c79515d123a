"""Two stages split by a minimum cut: each free op in the stage that hands the fewest bytes between them.

``partition._sunk_levels`` calls :func:`two_stages_by_min_cut` when the as-soon-as-possible levels give
exactly two stages (the kernel model's regions A and B) on a trace of at most
``partition._MIN_CUT_MAX_NODES`` symbols; above that, or with more stages, its sweep places the ops.
"""

from __future__ import annotations

import math

import networkx as nx
from thunder.core.dtypes import to_torch_dtype

from fusion_alias.aliasing import shape_reader, tensor_args, tensor_outs


def _nbytes(p) -> int:
    return math.prod(p.shape) * to_torch_dtype(p.dtype).itemsize


def _byte_counter():
    """``_nbytes`` for the stage that asks now: the shape read as ``shape_reader`` does, the item
    size remembered per dtype (``to_torch_dtype`` checks its argument's type on every call: two
    thirds of ``_nbytes``; the views bench asks it for ~60k values)."""
    shape_of = shape_reader()
    itemsize: dict[int, tuple] = {}  # id(dtype) -> (dtype, its item size); the dtype is kept

    def nbytes(p) -> int:
        dtype = p.dtype
        entry = itemsize.get(id(dtype))
        if entry is None or entry[0] is not dtype:
            entry = itemsize[id(dtype)] = (dtype, to_torch_dtype(dtype).itemsize)
        return math.prod(shape_of(p)) * entry[1]

    return nbytes


def two_stages_by_min_cut(bsyms, es, first, data, fusible, level, latest, size) -> list[int]:
    """Note [two stages split by a minimum cut]: with two stages (the kernel model's regions A
    and B), placing the free nodes (ASAP level 0, latest level 1) is a closure problem:
    ``networkx.minimum_cut`` on a graph whose source side is stage 0 and sink side stage 1.
    An edge ``u -> v`` between fusible nodes becomes an infinite arc ``v -> u`` (``u`` in stage 1
    forces ``v`` there); a value crosses when its producer is in stage 0 and a consumer in stage 1
    (an auxiliary node per producer, reached through an arc of the value's bytes); a tensor made
    outside the regions is read once by each stage that reads it (two auxiliary nodes). The cut's
    capacity is then exactly the bytes handed between stages and read twice, and it is minimal.
    Worked example, ``rows_rw``: the sum over the updated matrix joins the stage that makes the
    matrix's new value instead of receiving the value in a buffer.

    Note [only the free nodes in the flow graph]: a node whose stage is forced (latest level 0,
    or ASAP level 1) is the source or the sink itself in the flow graph (``vertex``), not a node
    tied to it by an infinite arc: every finite cut puts it on that side anyway, so the cuts, their
    capacities and the free nodes' sides are the same, and networkx's pure-Python max flow runs on
    the free nodes and their values only: a value whose producer and consumers are all forced, or a
    tensor made outside that only forced nodes read, adds the same to every cut and is left out, as
    are arcs into the source or out of the sink, which no cut crosses. (With every node in the
    graph, a 6k-symbol trace with 1k free nodes spent 0.7 s in the max flow, a 18k-symbol one
    2-5 s.)

    Note [one consumer, one arc]
    ----------------------------
    An auxiliary node stands for a value read in several places. Where only one free node's side
    decides what crosses, the arcs through it are one arc: a value whose consumers are all one
    vertex crosses exactly when its producer is in stage 0 and that vertex in stage 1 (an arc of its
    bytes between the two); a tensor made outside the regions and read by one free node ``x`` beside
    forced readers of one stage is read once more exactly when ``x`` is in the other stage (an arc
    from the source to ``x`` when the forced readers are in stage 0, from ``x`` to the sink when in
    stage 1), and read by ``x`` alone, or by both stages anyway, it adds the same to every cut and
    is left out. The cuts and their capacities are unchanged; the views bench at 19.5k symbols went
    from 13.9k auxiliary and free nodes in the max flow to none (Note [a free node tied only to the
    source and the sink]): its partition from 1.3 s to 0.2-0.3 s.
    """
    g = nx.DiGraph()
    src, snk = ("s",), ("t",)
    g.add_node(src)
    g.add_node(snk)
    nodes = [v for v in range(len(bsyms)) if fusible[v]]
    vertex: dict[int, object] = {}
    for v in nodes:
        if latest[v] == 0:
            vertex[v] = src
        elif level[v] == 1:
            vertex[v] = snk
        else:
            vertex[v] = v
            g.add_node(v)

    def arc(a, b, **capacity) -> None:
        if a is not b and a is not snk and b is not src:
            g.add_edge(a, b, **capacity)

    def bytes_arc(a, b, nbytes: int) -> None:
        """An arc of ``nbytes`` from ``a`` to ``b``, added to one already there: never in place of
        an infinite one (an order the edges force), never dropping another value's bytes."""
        if a is b or a is snk or b is src:
            return
        held = g.succ[a].get(b)  # (``a`` is the source or a free node: in the graph)
        if held is None:
            g.add_edge(a, b, capacity=nbytes)
        elif "capacity" in held:
            held["capacity"] += nbytes

    producer_of = {}
    for v in nodes:
        for o in tensor_outs(bsyms[v]):
            producer_of.setdefault(o.name, v)
    outside_readers: dict[str, list[int]] = {}
    outside_size: dict[str, int] = {}
    for v in nodes:
        for u, _, _ in es[first[v]:first[v + 1]]:
            if fusible[u]:
                arc(vertex[v], vertex[u])
    consumers: dict[int, list[int]] = {}
    for u, v in data:  # (hazard edges order nodes, they carry no value)
        if fusible[u] and fusible[v]:
            consumers.setdefault(u, []).append(v)
    for u, vs in consumers.items():
        ends = [vertex[v] for v in vs]
        if all(x is src or x is snk for x in (vertex[u], *ends)):
            continue  # (forced ends only: the value crosses or not whatever the free nodes do)
        if all(x is ends[0] for x in ends):  # Note [one consumer, one arc]
            bytes_arc(vertex[u], ends[0], size(u))
            continue
        aux = ("out", u)
        arc(vertex[u], aux, capacity=size(u))
        for x in ends:
            arc(aux, x)
    nbytes = _byte_counter()
    for v in nodes:
        for p in tensor_args(bsyms[v]):
            if p.name not in producer_of:
                outside_readers.setdefault(p.name, []).append(v)
                outside_size[p.name] = nbytes(p)
    for name, readers in outside_readers.items():
        ends = [vertex[r] for r in readers]
        free_ends = {id(x): x for x in ends if x is not src and x is not snk}
        if len(free_ends) == 1:  # Note [one consumer, one arc]
            x, = free_ends.values()
            early_too, late_too = any(y is src for y in ends), any(y is snk for y in ends)
            if late_too and not early_too:
                bytes_arc(x, snk, outside_size[name])  # (read again early when x is)
            elif early_too and not late_too:
                bytes_arc(src, x, outside_size[name])  # (read again late when x is)
            continue  # (read by x alone: once in every cut; by both stages anyway: twice)
        if not free_ends:
            continue  # (as above: read by forced nodes only)
        late, early = ("late", name), ("early", name)
        arc(src, late, capacity=outside_size[name])
        arc(early, snk, capacity=outside_size[name])
        for x in ends:
            arc(late, x)
            arc(x, early)
    alone = _placed_alone(g, src, snk, [v for v in nodes if vertex[v] is v])
    g.remove_nodes_from(alone)
    stage0 = nx.minimum_cut(g, src, snk)[1][0] if len(g) > 2 else ()
    final = list(level)
    for v in nodes:
        final[v] = 0 if vertex[v] is src or v in stage0 or alone.get(v) == 0 else 1
    return final


def _placed_alone(g: nx.DiGraph, src, snk, free: list) -> dict:
    """Note [a free node tied only to the source and the sink]
    -----------------------------------------------------------
    A free node none of whose arcs leads to another free or auxiliary node is a flow problem of its
    own: whatever the rest of the graph does, the cut crosses its arcs from the source (bytes it reads
    from stage 0, or an infinite arc: a consumer forced into stage 0) when it goes to stage 1, and its
    arcs to the sink when it stays in stage 0. It takes the cheaper side; on a tie, stage 0, which is
    where the max flow leaves it (its arc to the sink saturated, it reaches the sink no more). In the
    bench's ``views`` trace every free node is such once Note [one consumer, one arc] has folded its
    values (per buffer an ``exp``, a ``convert_element_type`` and a ``mul``: 8.4k at 19.5k symbols),
    and networkx's max flow ran on all of them. Returns node -> stage for each such node."""
    inf = float("inf")
    placed = {}
    for v in free:
        into, out = g.pred[v], g.succ[v]
        if any(u is not src for u in into) or any(w is not snk for w in out):
            continue
        c_in = into[src].get("capacity", inf) if src in into else 0
        c_out = out[snk].get("capacity", inf) if snk in out else 0
        placed[v] = 1 if c_out > c_in else 0
    return placed
