"""The data edges of the dependency graph: each node's producers, looked up by name (graph.py builds the
rest; ``data_edges`` alone serves a trace that writes nothing)."""

from __future__ import annotations

from fusion_alias.aliasing import flattened
from fusion_alias.dependency_edges import DependencyEdges


# Note [a symbol with many arguments]: a node's data edges come once per producer, found by
# looking in the edges added for that node so far (``us[start:]``): cheapest for the few arguments
# of most symbols, quadratic for a return of thousands of values (the bench's ``views`` trace:
# 0.7 s of a 30k-symbol pass). Past ``FEW_ARGS`` arguments, a set remembers the producers.
FEW_ARGS = 16


def edges_from_producers(args, producer_of, us: list, vs: list, i: int, arg_producer: list, arg_name: list) -> None:
    """A data edge into node ``i`` from the producer of each of ``args``, once per producer, in the
    order of the arguments (Note [a symbol with many arguments]); each argument's producer and name
    appended to ``arg_producer`` and ``arg_name`` (dependency_edges.py, Note [each argument's producer, kept])."""
    seen: set[int] = set()
    for a in args:
        name = a._name
        j = producer_of(name)
        arg_producer.append(j)
        arg_name.append(name)
        if j is not None and j not in seen:
            seen.add(j)
            us.append(j)
            vs.append(i)


def data_edges(bsyms, edges: DependencyEdges) -> dict[str, int]:
    """Add a ``data`` edge from each producer to each consumer (once per pair); return name →
    first producer (Note [the graph in one walk], without hazards)."""
    producer_idx: dict[str, int] = {}
    us, vs = edges.data_u, edges.data_v
    get = producer_idx.get
    arg_producer, arg_name, arg_start = edges.arg_producer, edges.arg_name, edges.arg_start
    for i, b in enumerate(bsyms):
        entry = flattened(b)
        _, args, outs, _, _ = entry
        start = len(us)  # the edges into node i are us[start:]: one per producer
        if len(args) > FEW_ARGS:
            edges_from_producers(args, get, us, vs, i, arg_producer, arg_name)
        else:
            for a in args:
                name = a._name
                j = get(name)
                arg_producer.append(j)
                arg_name.append(name)
                if j is not None and (len(us) == start or j not in us[start:]):
                    us.append(j)
                    vs.append(i)
        edges.node_entry.append(entry)
        arg_start.append(len(arg_producer))
        edges.first_out.append(outs[0]._name if outs else None)
        for o in outs:
            name = o._name
            if name not in producer_idx:
                producer_idx[name] = i
    return producer_idx
