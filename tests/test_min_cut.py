"""partition.py, Notes [two stages split by a minimum cut] and [only the free nodes in the flow graph]:
the stages the cut gives are a placement the edges allow, and no other placement of the free nodes
hands fewer bytes between the stages. Checked by trying every placement on the suite's programs."""

import itertools

import pytest

import fusion_alias
from fusion_alias import partition as P
from fusion_alias.aliasing import tensor_args, tensor_outs
from fusion_alias.bench.programs import SUITE

_MAX_FREE = 12  # 4096 placements per cut, at most
# the suite's programs whose two-stage cut has free nodes (1 to 10 of them); the others have none,
# or more than _MAX_FREE (kv_two_caches, kv_two_steps, residual_aliased)
_WITH_FREE_NODES = ["f", "h", "k", "scalar_view_then_exp", "write_then_add", "kv_write_read", "kv_from_self",
                    "residual_view", "rows_rw", "overlapping_views"]


_WITH_MANY_FREE_NODES = _WITH_FREE_NODES + ["kv_two_caches", "kv_two_steps", "residual_aliased"]


def _cuts_while(compile_it, monkeypatch) -> list[tuple]:
    """Each call of the two-stage cut while ``compile_it()`` runs: its arguments and its answer."""
    seen = []
    cut = P._two_stages_by_min_cut

    def spy(*args):
        final = cut(*args)
        seen.append((args, final))
        return final

    monkeypatch.setattr(P, "_two_stages_by_min_cut", spy)
    compile_it()
    return seen


def _cuts_of(program, monkeypatch) -> list[tuple]:
    """Each call of the two-stage cut while compiling ``program``."""
    return _cuts_while(lambda: fusion_alias.jit(program.fn)(*program.make_inputs(0)), monkeypatch)


def _bytes_between(stage: list[int], bsyms, data, fusible, size) -> int:
    """The Note's cost, counted directly: each value made in stage 0 and read in stage 1, and each
    tensor made outside the regions read in both stages (once more)."""
    crossing = {u for u, v in data if fusible[u] and fusible[v] and stage[u] == 0 and stage[v] == 1}
    made = {o.name for v in range(len(bsyms)) if fusible[v] for o in tensor_outs(bsyms[v])}
    stages_reading: dict = {}
    for v in range(len(bsyms)):
        if fusible[v]:
            for p in tensor_args(bsyms[v]):
                if p.name not in made:
                    stages_reading.setdefault(p.name, (p, set()))[1].add(stage[v])
    return sum(size(u) for u in crossing) + sum(
        P._nbytes(p) for p, stages in stages_reading.values() if len(stages) == 2)


def _allowed(stage: list[int], es, fusible) -> bool:
    return all(stage[u] <= stage[v] for u, v, _ in es if fusible[u] and fusible[v])


@pytest.mark.parametrize("program", [p for p in SUITE if p.name in _WITH_FREE_NODES], ids=lambda p: p.name)
def test_min_cut_hands_the_fewest_bytes(program, monkeypatch):
    checked = 0
    for (bsyms, es, first, data, fusible, level, latest, size), final in _cuts_of(program, monkeypatch):
        free = [v for v in range(len(bsyms)) if fusible[v] and latest[v] != 0 and level[v] != 1]
        if not free or len(free) > _MAX_FREE:
            continue
        checked += 1
        assert _allowed(final, es, fusible)
        got = _bytes_between(final, bsyms, data, fusible, size)
        for placement in itertools.product((0, 1), repeat=len(free)):
            stage = list(final)
            for v, s in zip(free, placement):
                stage[v] = s
            if _allowed(stage, es, fusible):
                assert got <= _bytes_between(stage, bsyms, data, fusible, size), (program.name, placement)
    assert checked, f"{program.name}: no two-stage cut with free nodes to check"


def _reference_min_bytes(bsyms, es, first, data, fusible, level, latest) -> int:
    """The fewest bytes any allowed placement hands between the stages, from the Note's plain
    formulation (every fusible node in the flow graph, forced ones tied to the source or the sink by
    infinite arcs, an auxiliary node for every value and every tensor made outside the regions):
    networkx's minimum cut value, less the first read of each tensor made outside; without the reductions of Notes [only the free nodes in the flow
    graph], [one consumer, one arc] and [a free node tied only to the source and the sink]."""
    import networkx as nx

    g = nx.DiGraph()
    src, snk = ("s",), ("t",)
    g.add_nodes_from((src, snk))
    nodes = [v for v in range(len(bsyms)) if fusible[v]]
    for v in nodes:
        g.add_node(v)
        if latest[v] == 0:
            g.add_edge(src, v)
        if level[v] == 1:
            g.add_edge(v, snk)
    for u, v, _ in es:
        if fusible[u] and fusible[v]:
            g.add_edge(v, u)
    made = {o.name: v for v in nodes for o in tensor_outs(bsyms[v])}
    for u in nodes:
        readers = {v for uu, v in data if uu == u and fusible[v]}
        if readers:
            size = sum(P._nbytes(o) for o in tensor_outs(bsyms[u]))
            g.add_edge(u, ("out", u), capacity=size)
            g.add_edges_from((("out", u), v) for v in readers)
    outside: dict = {}
    for v in nodes:
        for p in tensor_args(bsyms[v]):
            if p.name not in made:
                outside.setdefault(p.name, (p, set()))[1].add(v)
    for name, (p, readers) in outside.items():
        g.add_edge(src, ("late", name), capacity=P._nbytes(p))
        g.add_edge(("early", name), snk, capacity=P._nbytes(p))
        for v in readers:
            g.add_edge(("late", name), v)
            g.add_edge(v, ("early", name))
    # (each tensor made outside is read once by every stage that reads it: the cut counts its first
    # read too, which every placement pays, ``_bytes_between`` only the second)
    return nx.minimum_cut_value(g, src, snk) - sum(P._nbytes(p) for p, _ in outside.values())


def _cuts_of_synthetic(kind: str, size: int, monkeypatch) -> list[tuple]:
    """Each call of the two-stage cut in the fusion pass over the bench's synthetic trace."""
    from fusion_alias.bench import scale

    return _cuts_while(lambda: scale.time_fusion_pass(scale.build(kind, size).trace, False), monkeypatch)


@pytest.mark.parametrize("source", ["suite", "views-300", "views-3000"])
def test_reduced_flow_graph_cuts_as_many_bytes_as_the_plain_one(source, monkeypatch):
    """Notes [one consumer, one arc] and [a free node tied only to the source and the sink]: the flow
    graph with auxiliary nodes folded into arcs and lone free nodes placed without the max flow hands
    exactly as many bytes between the stages as the plain formulation's minimum cut, on every two-stage
    cut of the suite's programs (free nodes of any number) and of the bench's ``views`` trace (thousands
    of free nodes, most of them placed alone)."""
    from fusion_alias import min_cut

    alone = []
    placed_alone = min_cut._placed_alone
    monkeypatch.setattr(min_cut, "_placed_alone", lambda *a: alone.append(placed_alone(*a)) or alone[-1])
    if source == "suite":
        cuts = [c for program in SUITE if program.name in _WITH_MANY_FREE_NODES for c in _cuts_of(program, monkeypatch)]
    else:
        kind, size = source.split("-")
        cuts = _cuts_of_synthetic(kind, int(size), monkeypatch)
        assert sum(map(len, alone)) >= int(size) // 10  # (thousands of free nodes placed without the flow)
    assert cuts
    for (bsyms, es, first, data, fusible, level, latest, size), final in cuts:
        assert _allowed(final, es, fusible)
        assert _bytes_between(final, bsyms, data, fusible, size) == _reference_min_bytes(
            bsyms, es, first, data, fusible, level, latest)
