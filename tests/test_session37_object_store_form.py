"""Session 37: the ``edges`` generator's object-argument store (fuzz/gen_edges.py, Note [a store into an object
argument]): in ``P_OBJECT_STORE`` of the ``store`` class's programs the list or dict argument is held by a namespace
argument, ``b.h.append(t)``, and the store must be refused (leaked_proxies.py). Drawn from a stream of its own: the
other programs are the ones they were. On 8c525ed seed 37701's 10 such programs of 150 gave 6 missed rejections."""

import re

import pytest

from fusion_alias import fuzz
from fusion_alias.fuzz import gen_edges, oracle
from helpers import generated_programs


def test_only_the_store_programs_change(monkeypatch):
    monkeypatch.setattr(gen_edges, "P_OBJECT_STORE", 0.0)
    before = generated_programs(("edges",), 37701, 60)
    monkeypatch.setattr(gen_edges, "P_OBJECT_STORE", 1.0)
    after = generated_programs(("edges",), 37701, 60)
    changed = [i for i, (a, b) in enumerate(zip(before, after)) if oracle.program_source(a) != oracle.program_source(b)]
    assert changed
    for i in changed:
        assert gen_edges.edge_class(before[i]) == "store"
        assert [s.code for s in before[i].stmts] == [re.sub(r"\bb\.h\b", "b", s.code) for s in after[i].stmts]
        assert any(s.must_refuse == gen_edges.STORE_REFUSAL for s in after[i].stmts if "b.h" in s.code)


@pytest.mark.parametrize("only", [[2, 7, 46, 68, 75], [80, 97, 127, 129, 148]])
def test_the_object_stores_are_refused(monkeypatch, only):
    monkeypatch.setattr(gen_edges, "P_OBJECT_STORE", 1.0)
    report = fuzz.run_fuzz(seed=37701, programs=150, only=only, generators=("edges",), do_shrink=False)
    assert report.runs and not report.failures, report.summary()
    assert report.unsupported
