"""Session 37: ``dce.drops_any`` tells from the dependency graph whether ``_dce`` would drop a symbol (dce.py,
Note [dead code found from the graph]); the pass runs ``_dce`` only then. Checked against ``_dce`` itself on every
pass of fuzz programs of several generators, and on programs with dead code of each origin (a composite's unused
subsymbol, a read rewritten away, an unused value the program computes)."""

import pytest
import torch

import fusion_alias
from fusion_alias import dce, fuzz, pipeline


@pytest.fixture
def checked(monkeypatch):
    """Every ``drops_any`` answer of the pass, checked against ``_dce``; the answers, counted."""
    seen = {True: 0, False: 0}
    drops_any = dce.drops_any

    def both(bsyms, data_u, trace):
        got = drops_any(bsyms, data_u, trace)
        assert got == (len(dce._dce(list(bsyms), trace)) != len(bsyms))
        seen[got] += 1
        return got

    monkeypatch.setattr(pipeline, "drops_any", both)
    return seen


@pytest.mark.parametrize("generators, seed", [(("basic",), 37603), (("fresh",), 37604), (("hidden",), 37607)])
def test_drops_any_answers_as_dce_on_fuzz_programs(checked, generators, seed):
    report = fuzz.run_fuzz(seed=seed, programs=12, generators=generators, do_shrink=False)
    assert not report.failures, report.summary()
    assert checked[False] > 0


PROGRAMS = {
    "unused value": lambda a, b: (a.exp(), b.add_(1), a * 2)[2],
    "read rewritten away": lambda a, b: (lambda v: (a.mul_(2), v * 1)[1])(a[0]),
    "unused softmax": lambda a, b: (torch.softmax(a, 0), b.mul_(3))[1],
    "nothing dead": lambda a, b: a.tanh_() * b,
    "a view read after a write": lambda a, b: (lambda v: (a.exp_(), v.tanh())[1])(a.t()),
}


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_drops_any_answers_as_dce_on_dead_code(checked, name):
    fn = PROGRAMS[name]
    base = torch.randn(4, 4)
    want = fn(base.clone(), base.clone())
    got = fusion_alias.jit(fn)(base.clone(), base.clone())
    torch.testing.assert_close(got, want)
    assert checked[True] + checked[False] > 0


def test_a_view_replayed_on_the_written_value_leaves_dead_code(checked):
    """``v = a.t(); a.exp_(); v.tanh()``: the read of ``v`` becomes a transpose of the written value, and ``v``'s
    own transpose is read by nothing any more: ``drops_any`` says so, and ``_dce`` drops it."""
    fn = PROGRAMS["a view read after a write"]
    base = torch.randn(4, 4)
    torch.testing.assert_close(fusion_alias.jit(fn)(base.clone(), base.clone()), fn(base.clone(), base.clone()))
    assert checked[True] == 1
