"""The compiled torch backend (``backend="torch"``, and ``auto`` on CPU): eager's results, and
exactly the reference backend's ``reads-first`` results even where a partition is wrong."""

import dataclasses

import pytest
import thunder
import torch

import fusion_alias
from fusion_alias.backends.compiled import CompiledFusion
from fusion_alias.backends.reference import ReferenceFusion
from fusion_alias.fuzz import run_fuzz
from helpers import as_tuple, assert_same, run_both
from programs import SEED_PROGRAMS, aliased_inputs

IDS = [p[0].__name__ for p in SEED_PROGRAMS]


def region_callables(jitted):
    return [b._call_ctx[b.sym.name] for b in fusion_alias.regions(jitted)]


@pytest.mark.parametrize("backend", ["torch", "auto"])
@pytest.mark.parametrize("fn,make_inputs,max_regions", SEED_PROGRAMS, ids=IDS)
def test_seed_program(fn, make_inputs, max_regions, backend):
    jitted, got, expected, sj, se = run_both(fn, make_inputs, backend=backend)
    assert_same(got, expected, sj, se)
    assert all(isinstance(c, CompiledFusion) for c in region_callables(jitted))
    hits = thunder.cache_hits(jitted)
    _, got, expected, sj, se = run_both(fn, make_inputs, seed=1, jitted=jitted)
    assert_same(got, expected, sj, se)
    assert thunder.cache_hits(jitted) == hits + 1


@pytest.mark.parametrize("fn,make_inputs,max_regions", SEED_PROGRAMS, ids=IDS)
def test_same_as_reads_first_on_wrong_partitions(fn, make_inputs, max_regions):
    """With hazards ignored the partition is wrong (f, h, k give wrong numbers); the compiled
    backend must still compute exactly what the reads-first reference schedule computes."""
    _, got, _, sj, _ = run_both(fn, make_inputs, backend="torch", unsafe_ignore_hazards=True)
    _, want, _, sw, _ = run_both(fn, make_inputs, backend="reference", unsafe_ignore_hazards=True)
    assert_same(got, want, sj, sw)


def test_writes_first_stays_with_the_reference_backend():
    fn, make_inputs, _ = SEED_PROGRAMS[0]
    jitted, *_ = run_both(fn, make_inputs, schedule="writes-first")
    assert all(isinstance(c, ReferenceFusion) and c.schedule == "writes-first" for c in region_callables(jitted))


def test_no_snapshot_without_alias_groups():
    def sgd(p, g, q, h):
        p.add_(g, alpha=-0.1)
        q.add_(h, alpha=-0.1)

    args = [torch.randn(4, 4) for _ in range(4)]
    jitted = fusion_alias.jit(sgd)
    jitted(*args)
    (fusion,) = region_callables(jitted)
    assert isinstance(fusion, CompiledFusion)
    assert "clone" not in fusion.source and "snap" not in fusion.source
    assert fusion.source.count(".copy_(") == 2


def _view_source_region():
    """A region writing a view of another input: ``a.copy_(b.t())``, compiled for independent inputs."""

    def prog(a, b):
        a.copy_(b.t())
        return a

    jitted = fusion_alias.jit(prog, backend="torch")
    jitted(torch.randn(4, 4), torch.randn(4, 4))
    (fusion,) = region_callables(jitted)
    return fusion.spec


def test_write_of_a_view_is_snapshotted_when_storages_meet():
    """The alias groups say a and b are independent; called with b = a anyway (the executor used
    directly, or a bug upstream), the source is cloned before the write, as reads-first does."""
    spec = _view_source_region()
    assert spec.alias_groups == []
    compiled, reference = CompiledFusion(spec), ReferenceFusion(spec, "reads-first")
    assert "snap" in compiled.source
    x = torch.randn(4, 4)
    y, want = x.clone(), x.t().clone()
    out_c, out_r = compiled(x, x), reference(y, y)
    assert len(out_c) == len(out_r)
    torch.testing.assert_close(y, want)
    torch.testing.assert_close(x, want)  # a transposed copy of itself, not a half-written one
    # independent inputs: no clone, the plain write
    a, b = torch.randn(4, 4), torch.randn(4, 4)
    compiled(a, b)
    torch.testing.assert_close(a, b.t())


def test_write_of_a_view_in_a_written_group_is_cloned():
    spec = dataclasses.replace(_view_source_region(), alias_groups=[])
    names = [p.name for p in spec.inputs]
    grouped = CompiledFusion(dataclasses.replace(spec, alias_groups=[names]))
    assert ".clone()" in grouped.source and "snap" not in grouped.source
    x = torch.randn(4, 4)
    want = x.t().clone()
    grouped(x, x)
    torch.testing.assert_close(x, want)


def test_plain_outputs_viewing_an_input_are_fresh():
    def prog(a, b):
        v = a.reshape(25)
        a.mul_(2)
        return v + 0, b.reshape(1), a.t()

    jitted, got, expected, sj, se = run_both(lambda a, b: prog(a, b), aliased_inputs, backend="torch")
    assert_same(got, expected, sj, se)


def _compiled_jit(fn, schedule):
    return fusion_alias.jit(fn, backend="torch")


def test_fuzz_sample():
    report = run_fuzz(programs=60, seed=11, schedules=("reads-first",), make_jit=_compiled_jit, do_shrink=False)
    assert not report.failures, report.summary() + "\n" + report.failures[0].detail
    assert report.ok >= 30, report.summary()


def _unsafe_compiled(fn, schedule):
    return fusion_alias.jit(fn, backend="torch", unsafe_ignore_hazards=True)


def _unsafe_reference(fn, schedule):
    return fusion_alias.jit(fn, backend="reference", schedule="reads-first", unsafe_ignore_hazards=True)


def test_fuzz_wrong_partitions_fail_alike():
    """Ignoring hazards, a fuzz program is wrong under the compiled backend exactly when it is
    wrong under reads-first (the two run the same schedule)."""
    compiled = run_fuzz(programs=25, seed=5, schedules=("reads-first",), make_jit=_unsafe_compiled, do_shrink=False)
    reference = run_fuzz(programs=25, seed=5, schedules=("reads-first",), make_jit=_unsafe_reference, do_shrink=False)
    assert sorted(f.program.name for f in compiled.failures) == sorted(f.program.name for f in reference.failures)
    assert compiled.ok == reference.ok
