"""The dependency graph as the pass keeps it: arrays of edges (Note [the graph as arrays]).

``graph.build_edges`` fills a :class:`DependencyEdges`; ``partition`` sweeps it;
``DependencyEdges.to_networkx`` gives the ``networkx.DiGraph`` reports, pictures and the
benchmarks use.
"""

from __future__ import annotations

import itertools
import operator

import networkx as nx


# Hazard kinds, as bits of a hazard edge's code (``DependencyEdges.hazard_code``).
RAW, WAR, WAW, UNSAFE = 2, 4, 8, 16
ORDER = 32  # two random draws (random_draws.py, Note [random draws in program order]): never unsafe
_KIND_NAMES = ((RAW, "raw"), (WAR, "war"), (WAW, "waw"), (ORDER, "order"))
_HEAD = operator.itemgetter(1)


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
        # ... per node ``i``, its proxy arguments' producers (``flattened(b)[1]``, in order; None: made by no
        # earlier node) and names at ``arg_producer[arg_start[i]:arg_start[i + 1]]`` and ``arg_name[...]``, and
        # its lists of proxy arguments and outputs, and its first output's name: Note [each argument's producer, kept]
        self.arg_producer: list[int | None] = []
        self.arg_name: list[str] = []
        self.arg_start: list[int] = [0]
        self.node_entry: list[tuple] = []  # (``flattened(b)``: its second and third entries are those lists)
        self.first_out: list[str | None] = []  # (its first output's name, None: it has none)
        # ... each node's ``sym.id``, and the nodes that are ``copy_`` prims (None: not recorded)
        self.sym_ids: list | None = None
        self.copies: list[int] | None = None

    def add(self, u: int, v: int, code: int) -> None:
        """A hazard edge (a data edge is appended to ``data_u``/``data_v`` by the builder)."""
        if u != v:
            self.hazard_u.append(u)
            self.hazard_v.append(v)
            self.hazard_code.append(code)

    def insert_hazards(self, pairs, code: int) -> None:
        """Hazard edges ``(u, v)`` of ``pairs`` (sorted), all with ``code``, each placed after the
        edges already into its head: the arrays stay in node order of the heads."""
        if not pairs:
            return
        merged = sorted(
            [*zip(self.hazard_v, range(len(self.hazard_v)), self.hazard_u, self.hazard_code),
             *((v, len(self.hazard_v) + k, u, code) for k, (u, v) in enumerate(pairs))]
        )
        self.hazard_v = [v for v, _, _, _ in merged]
        self.hazard_u = [u for _, _, u, _ in merged]
        self.hazard_code = [c for _, _, _, c in merged]

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

    def in_node_order_list(self) -> list[tuple[int, int, int]]:
        """``list(in_node_order())``, made by a stable sort of the data edges followed by the
        hazard edges by head: each array is one ascending run, so the sort is one merge in C, and a
        head's data edges come before its hazard edges, as the generator yields them."""
        return sorted([*zip(self.data_u, self.data_v, itertools.repeat(0)),
                       *zip(self.hazard_u, self.hazard_v, map(UNSAFE.__and__, self.hazard_code))],
                      key=_HEAD)

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


# Note [each argument's producer, kept]
# -------------------------------------
# The graph's walk (graph.py; data_edges.py for a trace that writes nothing) asks the producer of every proxy
# argument of every node (``producer_idx``, a dict of every name the trace makes). Region assembly asks the same
# question again (regions.py, Note [region inputs and outputs in one walk forward]); on a 100k-symbol trace that
# second round of lookups by name, each a few cache misses (the name's hash, the table, the entry, scattered
# over a trace of ~800k objects), cost as much as the rest of assembly and grew 7x from 30k symbols. So the walk
# appends each answer to one flat list, ``arg_producer`` (None for a name no earlier node made), and the name it
# asked to another, ``arg_name``, with ``arg_start`` giving each node's run of both; and it keeps each node's
# lists of proxy arguments and outputs (``node_entry``: ``flattened(b)``, whose ``[1]`` and ``[2]`` they are)
# and its first output's name (``first_out``, None: none; a region's ``_short_key``). Assembly reads these in
# node order and hashes a name only where a value crosses a region's edge. Example: ``t0 = exp(a); t1 = mul(t0,
# a)``: ``arg_producer == [None, 0, None]``, ``arg_name == ["a", "t0", "a"]``, ``arg_start == [0, 1, 3]``.
