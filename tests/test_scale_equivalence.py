"""The fast paths of graph building and partitioning give what the plain ones give."""

import networkx as nx
import pytest

from fusion_alias.bench import scale
from fusion_alias.executor import executor
from fusion_alias.graph import build_graph
from fusion_alias.partition import _levels, _levels_node_by_node, partition

CASES = [(kind, aliased) for kind in scale.KINDS for aliased in (False, True)]


def _prepared(kind, aliased, size=300):
    syn = scale.build(kind, size)
    return executor.prepare(syn.trace, input_groups=syn.groups if aliased else [])


def _rebuilt(graph):
    """The same graph, built through networkx's public methods."""
    g = nx.DiGraph()
    g.add_nodes_from(graph.nodes)
    g.add_edges_from((u, v, dict(d)) for u, v, d in graph.edges(data=True))
    return g


@pytest.mark.parametrize("kind,aliased", CASES)
def test_graph_built_in_place_is_a_plain_digraph(kind, aliased):
    # Note [adjacency built in place] in graph.py
    prep = _prepared(kind, aliased)
    g, ref = prep.graph, _rebuilt(prep.graph)
    assert list(g.nodes(data=True)) == list(ref.nodes(data=True))
    assert list(g.edges(data=True)) == list(ref.edges(data=True))
    for v in g:
        assert dict(g.pred[v]) == dict(ref.pred[v])
        assert dict(g.succ[v]) == dict(ref.succ[v])
    assert nx.is_directed_acyclic_graph(g)
    # successor and predecessor maps share the edge attribute dicts, as networkx's do
    u, v = next(iter(g.edges))
    g.edges[u, v]["probe"] = 1
    assert g.pred[v][u]["probe"] == 1
    g.add_edge(len(prep.bsyms), 0, kinds={"data"}, unsafe=False)
    assert g.has_edge(len(prep.bsyms), 0) and len(prep.bsyms) in g.pred[0]


@pytest.mark.parametrize("kind,aliased", CASES)
@pytest.mark.parametrize("ignore_hazards", [False, True])
def test_level_sweep_matches_node_by_node(kind, aliased, ignore_hazards):
    # Note [levels in one sweep over the edges] in partition.py
    prep = _prepared(kind, aliased)
    n = len(prep.bsyms)
    fusible = [prep.is_fusible(b) for b in prep.bsyms]
    assert _levels(n, prep.graph, fusible, ignore_hazards) == _levels_node_by_node(
        n, prep.graph, fusible, ignore_hazards
    )
    # and over the arrays the pass keeps (Note [the graph as arrays] in dependency_edges.py)
    assert _levels(n, prep.edges, fusible, ignore_hazards) == _levels_node_by_node(
        n, prep.graph, fusible, ignore_hazards
    )
    # the node-by-node path on a graph built the public way gives the same partition
    ref = _rebuilt(prep.graph)
    a = partition(prep.bsyms, prep.graph, prep.is_fusible, ignore_hazards=ignore_hazards)
    b = partition(prep.bsyms, ref, prep.is_fusible, ignore_hazards=ignore_hazards)
    c = partition(prep.bsyms, prep.edges, prep.is_fusible, ignore_hazards=ignore_hazards)
    assert a.items == b.items == c.items and a.stage == b.stage == c.stage


def _write_then_reduce_a_view(a, b):
    a.mul_(2)
    return b.sum()


@pytest.mark.parametrize("ignore_hazards", [False, True])
def test_array_sweep_sees_hazards_into_a_node_before_its_data_successors(ignore_hazards):
    # inputs (x, x[1]): sum(b) has a raw hazard from the write into a, found after all data
    # edges; the sweep must order it before sum's data edge to shallow_copy(sum) (the arrays
    # keep data edges and hazards apart: DependencyEdges.in_node_order)
    import torch
    from fusion_alias import pipeline

    seen = []
    real = pipeline.partition

    def spy(bsyms, graph, is_fusible, **kw):
        part = real(bsyms, graph, is_fusible, **kw)
        seen.append((bsyms, graph, is_fusible, kw, part))
        return part

    x = torch.randn(3, 4)
    pipeline.partition = spy
    try:
        import fusion_alias

        out = fusion_alias.jit(_write_then_reduce_a_view, backend="reference")(x, x[1])
    finally:
        pipeline.partition = real
    y = torch.randn(3, 4).copy_(x / 2)
    assert torch.allclose(out, _write_then_reduce_a_view(y, y[1]))
    bsyms, edges, is_fusible, kw, part = seen[-1]
    n = len(bsyms)
    fusible = [is_fusible(b) for b in bsyms]
    assert _levels(n, edges, fusible, ignore_hazards) == _levels_node_by_node(
        n, edges.to_networkx(), fusible, ignore_hazards
    )
    ref = partition(bsyms, _rebuilt(edges.to_networkx()), is_fusible, ignore_hazards=ignore_hazards)
    assert part.items == partition(bsyms, edges, is_fusible).items
    assert partition(bsyms, edges, is_fusible, ignore_hazards=ignore_hazards).items == ref.items


def test_level_sweep_falls_back_on_unordered_nodes():
    g = nx.DiGraph()
    g.add_nodes_from([2, 0, 1])
    g.add_edge(0, 1, kinds={"raw"}, unsafe=True)
    g.add_edge(1, 2, kinds={"data"}, unsafe=False)
    fusible = [True, True, True]
    assert _levels(3, g, fusible, False) == _levels_node_by_node(3, g, fusible, False) == [0, 1, 1]


def test_regions_are_found_again_by_their_symbols():
    # regions.py, Note [the pass's regions, found again]: the same symbols find a region's
    # facts (a region Thunder hands back), and the many small regions of an aliased trace
    # have short keys of their own
    from types import SimpleNamespace

    from fusion_alias.regions import _short_key, register, registered_meta

    prep = _prepared("chain", True)
    pairs = [prep.bsyms[i:i + 2] for i in range(0, len(prep.bsyms) - 1, 2)]
    keys = [_short_key(p) for p in pairs]
    assert len(set(keys)) == len(keys)
    registry: dict = {}
    for i, (p, k) in enumerate(zip(pairs, keys)):
        register(registry, k, SimpleNamespace(bsyms=p, meta=i))
    assert [registered_meta(registry, p) for p in pairs] == list(range(len(pairs)))  # (the very lists)
    assert [registered_meta(registry, list(p)) for p in pairs] == list(range(len(pairs)))  # (equal symbols)
    assert registered_meta(registry, pairs[0][:1]) is None
    # equal short keys: compared in full, the region registered last found first
    register(registry, keys[0], SimpleNamespace(bsyms=list(pairs[0]), meta="again"))
    assert registered_meta(registry, list(pairs[0])) == "again"
    register(registry, keys[1], SimpleNamespace(bsyms=pairs[0][:1] * 2, meta="other"))  # (a forged collision)
    assert registered_meta(registry, list(pairs[1])) == 1
