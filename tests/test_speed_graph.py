"""partition._sunk_levels' closed form (Note [a candidate's cost from the operands' levels]) places every
node where trying every candidate level does, on random graphs."""

import random

import pytest

import thunder.core.prims as prims

from fusion_alias import partition


def _reference(sizes, sym_ids, n, es, fusible, level, ignore_hazards):
    """Every candidate level in [lo, hi] tried, costs as the Note defines them (the sweep before the closed form)."""
    top = max(level, default=-1)
    if top <= 0:
        return level
    ret = prims.PrimIDs.RETURN
    latest = [top if f else lvl for f, lvl in zip(fusible, level)]
    consumer_levels = [set() for _ in range(n)]
    for u, v, unsafe in reversed(es):
        if not fusible[u] or sym_ids[v] is ret:
            continue
        lim = latest[v] - 1 if fusible[v] and unsafe and not ignore_hazards else latest[v]
        if fusible[v]:
            consumer_levels[u].add(latest[v])
        latest[u] = min(latest[u], lim)
    final = list(level)
    for v in range(n):
        if not fusible[v] or latest[v] == level[v]:
            continue
        ins = [e for e in es if e[1] == v]
        lo = max([final[u] + (not fusible[u] or bool(unsafe and not ignore_hazards)) for u, _, unsafe in ins], default=0)
        hi = latest[v]
        if lo >= hi:
            final[v] = lo
            continue
        outs = consumer_levels[v]
        best = best_cost = None
        for cand in range(lo, hi + 1):
            cost = sum(sizes[u] for u, _, _ in ins if fusible[u] and final[u] != cand)
            if outs and outs != {cand}:
                cost += sizes[v]
            if best_cost is None or cost <= best_cost:
                best, best_cost = cand, cost
        final[v] = best
    return final


def _random_graph(rng):
    n = rng.randint(2, 30)
    fusible = [rng.random() < 0.8 for _ in range(n)]
    sym_ids = [prims.PrimIDs.RETURN if i == n - 1 and rng.random() < 0.5 else object() for i in range(n)]
    es = sorted(((rng.randrange(v), v, rng.choice((0, 0, 16))) for v in range(1, n) for _ in range(rng.randint(0, 3))),
                key=lambda e: e[1])
    return n, fusible, sym_ids, es


@pytest.mark.parametrize("seed", range(40))
def test_closed_form_places_nodes_as_every_candidate_tried(seed, monkeypatch):
    monkeypatch.setattr(partition, "_MIN_CUT_MAX_NODES", -1)  # (the sweep, not the min cut)
    monkeypatch.setattr(partition, "_byte_counter", lambda: (lambda size: size))
    monkeypatch.setattr(partition, "tensor_outs", lambda size: [size])  # (a node's "bsym" is its size)
    rng = random.Random(seed)
    for _ in range(50):
        n, fusible, sym_ids, es = _random_graph(rng)
        level = [0 if f else -1 for f in fusible]
        for u, v, unsafe in es:
            level[v] = max(level[v], level[u] + (fusible[v] and (not fusible[u] or bool(unsafe))))
        sizes = [rng.choice((0, 1, 2, 4, 8)) for _ in range(n)]
        ignore = rng.random() < 0.3
        got = partition._sunk_levels(sizes, sym_ids, n, list(es), None, fusible, list(level), ignore)
        assert got == _reference(sizes, sym_ids, n, es, fusible, level, ignore)
