"""Session 45: region assembly reads each argument's producer from the graph's walk (dependency_edges.py,
Note [each argument's producer, kept]) instead of looking every name up again. These tests check the arrays the
walk keeps, and that every region's symbols, inputs, outputs and key are what a plain walk by name gives."""

import importlib

import pytest
import torch

import fusion_alias
from fusion_alias.aliasing import flattened
from fusion_alias.bench import scale
from fusion_alias.executor import executor
from fusion_alias.partition import partition

regions = importlib.import_module("fusion_alias.regions")  # (``fusion_alias.regions`` is also a function)

CASES = [(kind, aliased) for kind in scale.KINDS for aliased in (False, True)]


def _by_name(bsyms, items) -> list[tuple]:
    """Region inputs, outputs and short keys by the definition, one name at a time (last region first)."""
    first_producer: dict[str, int] = {}
    for i, b in enumerate(bsyms):
        for o in flattened(b)[2]:
            first_producer.setdefault(o.name, i)
    item_of = {i: k for k, (_, idx) in enumerate(items) for i in idx}
    out = []
    for k, (kind, idx) in enumerate(items):
        if kind == "node":
            continue
        made_here: set[str] = set()
        inputs, seen = [], set()
        for i in idx:
            for a in flattened(bsyms[i])[1]:
                j = first_producer.get(a.name)
                internal = j is not None and j < i and a.name in made_here
                if not internal and a.name not in seen:
                    seen.add(a.name)
                    inputs.append(a.name)
            made_here.update(o.name for o in flattened(bsyms[i])[2])
        later_reads = {a.name for k2, (_, idx2) in enumerate(items) if k2 > k for i in idx2
                       for a in flattened(bsyms[i])[1]}
        outputs = [o.name for i in idx for o in flattened(bsyms[i])[2]
                   if o.name in later_reads and first_producer.get(o.name) == i and item_of.get(i) == k]
        out.append(([bsyms[i] for i in idx], inputs, outputs, regions._short_key([bsyms[i] for i in idx])))
    return out[::-1]


@pytest.mark.parametrize("kind,aliased", CASES)
def test_region_io_is_the_walk_by_name(kind, aliased):
    syn = scale.build(kind, 300)
    prep = executor.prepare(syn.trace, input_groups=syn.groups if aliased else [])
    part = partition(prep.bsyms, prep.edges, prep.is_fusible)
    got = regions._regions_io(prep.bsyms, part.items, prep.edges)
    want = _by_name(prep.bsyms, part.items)
    assert len(got) == len(want) >= 1
    if aliased:  # (the aliased variants are cut into many regions; those of ``views`` hand values on)
        assert len(got) > 10
        assert any(out for _, _, out, _ in got) == (kind == "views")
    for (g_bsyms, g_in, g_out, g_key), (w_bsyms, w_in, w_out, w_key) in zip(got, want):
        assert g_bsyms == w_bsyms
        assert [p.name for p in g_in] == w_in
        assert [p.name for p in g_out] == w_out
        assert g_key == w_key


def test_the_walk_keeps_each_arguments_producer():
    """``t0 = exp(a); t1 = mul(t0, a)`` shaped programs: per node, its arguments' producers (None for an input),
    their names, and its first output's name, in node order."""
    syn = scale.build("chain", 50)
    prep = executor.prepare(syn.trace, input_groups=[])
    edges, bsyms = prep.edges, prep.bsyms
    assert len(edges.arg_start) == len(bsyms) + 1 == len(edges.first_out) + 1
    producer: dict[str, int] = {}
    for i, b in enumerate(bsyms):
        args, outs = flattened(b)[1], flattened(b)[2]
        run = slice(edges.arg_start[i], edges.arg_start[i + 1])
        assert edges.arg_name[run] == [a.name for a in args]
        assert edges.arg_producer[run] == [producer.get(a.name) for a in args]
        assert edges.node_entry[i][1] is args and edges.node_entry[i][2] is outs
        assert edges.first_out[i] == (outs[0].name if outs else None)
        for o in outs:
            producer.setdefault(o.name, i)


@pytest.mark.parametrize("schedule", ["reads-first", "writes-first"])
def test_regions_that_export_and_read_back_agree_with_eager(schedule):
    """A program whose regions hand values to later regions and read inputs the earlier ones wrote."""

    def f(a, b):
        t = a.exp_() * 2
        b.add_(t[0])
        u = b.sum() + t.sin()
        a.mul_(u)
        return u, t

    x = torch.randn(4, 4)
    args = (x, x[1])
    ref = [t.clone() for t in (x,)]
    ref_args = (ref[0], ref[0][1])
    want = f(*ref_args)
    got = fusion_alias.jit(f, backend="reference", schedule=schedule)(*args)
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w)
    torch.testing.assert_close(x, ref[0])
