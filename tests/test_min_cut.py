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


def _cuts_of(program, monkeypatch) -> list[tuple]:
    """Each call of the two-stage cut while compiling ``program``: its arguments and its answer."""
    seen = []
    cut = P._two_stages_by_min_cut

    def spy(*args):
        final = cut(*args)
        seen.append((args, final))
        return final

    monkeypatch.setattr(P, "_two_stages_by_min_cut", spy)
    fusion_alias.jit(program.fn)(*program.make_inputs(0))
    return seen


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
