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
from thunder.core.proxies import Proxy, TensorProxy
from thunder.core.symbol import BoundSymbol

from fusion_alias import ops
from fusion_alias.aliasing import AliasInfo, may_write, proxy_args, proxy_outs, tensor_args


def memory_reads(bsym: BoundSymbol) -> list[TensorProxy]:
    """Tensor arguments whose *memory* the symbol reads."""
    if bsym.sym.id is ops.PrimIDs.RESHAPE:
        # torch's reshape copies when the layout is not viewable: a read, conservatively
        return [bsym.args[0]]
    if ops.is_view(bsym) or ops.is_update_aliases(bsym):
        return []
    if ops.is_copy(bsym):
        src = bsym.args[0]
        return [src] if isinstance(src, TensorProxy) else []
    return tensor_args(bsym)


def memory_writes(bsym: BoundSymbol, opaque: bool) -> list[TensorProxy]:
    if ops.is_copy(bsym):
        return [bsym.args[1]]
    if opaque and may_write(bsym):
        return tensor_args(bsym)
    return []


def _pointwise_feeders(bsyms, producer_idx: dict[str, int], written_groups: set, info: AliasInfo) -> list:
    """For each node, the memory-reading elementwise nodes that feed it through
    elementwise ops of one shape (None where the node is not elementwise).

    One forward pass; each set only holds reads of written memory, so it stays
    small (after substitution most reads of written memory are gone).
    """
    feeders: list = [None] * len(bsyms)
    for n, b in enumerate(bsyms):
        if b.sym.id is ops.PrimIDs.SHALLOW_COPY:
            # the same elements at the same indices: feeds through (addcmul_ makes these)
            j = producer_idx.get(b.args[0].name)
            feeders[n] = set(feeders[j]) if j is not None and feeders[j] is not None else set()
            continue
        if b.sym.id not in ops.ELEMENTWISE_IDS or not isinstance(b.output, TensorProxy):
            continue
        shape = tuple(b.output.shape)
        acc: set[int] = set()
        for a in tensor_args(b):
            if a.name in info.root and info.group(a.name) in written_groups:
                acc.add(n)
            j = producer_idx.get(a.name)
            if j is not None and feeders[j] is not None and tuple(a.shape) == shape:
                acc |= feeders[j]
        feeders[n] = acc
    return feeders


def build_graph(
    bsyms: Sequence[BoundSymbol],
    info: AliasInfo,
    is_fusible: Callable[[BoundSymbol], bool],
) -> nx.DiGraph:
    """Dependency graph of ``bsyms`` (see module docstring)."""
    producer_idx: dict[str, int] = {}
    for i, b in enumerate(bsyms):
        for o in proxy_outs(b):
            producer_idx.setdefault(o.name, i)

    edges: dict[tuple[int, int], dict] = {}  # collected first: networkx's add_edge is slow one by one

    def add(u: int, v: int, kind: str, unsafe: bool = False) -> None:
        if u == v:
            return
        data = edges.get((u, v))
        if data is None:
            edges[(u, v)] = {"kinds": {kind}, "unsafe": unsafe}
        else:
            data["kinds"].add(kind)
            data["unsafe"] = data["unsafe"] or unsafe

    for i, b in enumerate(bsyms):
        for a in proxy_args(b):
            if isinstance(a, Proxy):
                j = producer_idx.get(a.name)
                if j is not None and j < i:
                    add(j, i, "data")

    written_groups = set()
    for b in bsyms:
        for d in memory_writes(b, not is_fusible(b)):
            written_groups.add(info.group(d.name))
    feeders = _pointwise_feeders(bsyms, producer_idx, written_groups, info)

    last_write: dict[str, int] = {}
    reads_since: dict[str, list[tuple[int, TensorProxy]]] = {}
    for i, b in enumerate(bsyms):
        opaque = not is_fusible(b)
        for p in memory_reads(b):
            if p.name not in info.root:
                continue
            grp = info.group(p.name)
            w = last_write.get(grp)
            if w is not None:
                add(w, i, "raw", unsafe=True)
            reads_since.setdefault(grp, []).append((i, p))
        for d in memory_writes(b, opaque):
            grp = info.group(d.name)
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
            src_ok = isinstance(src, TensorProxy) and tuple(src.shape) == tuple(d.shape)
            for r, p in reads_since.get(grp, ()):
                if r == i:
                    continue
                safe = (
                    not opaque
                    and src_ok
                    and r in fed_by
                    and info.same_view(p.name, d.name)
                    and tuple(p.shape) == tuple(d.shape)
                )
                add(r, i, "war", unsafe=not safe)
            last_write[grp] = i
    g = nx.DiGraph()
    g.add_nodes_from(range(len(bsyms)))
    g.add_edges_from((u, v, d) for (u, v), d in edges.items())
    return g


def _covers(earlier: BoundSymbol, later: BoundSymbol, info: AliasInfo) -> bool:
    if not (ops.is_copy(earlier) and ops.is_copy(later)):
        return False
    d1, d2 = earlier.args[1].name, later.args[1].name
    if info.same_view(d1, d2):
        return True
    return info.is_whole(d2) and info.root[d1] == info.root[d2]
