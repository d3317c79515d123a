"""Session 45 (helper-73): out-of-place foreach functions in the ``basic``, ``hidden`` and ``calls`` generators
(fuzz/foreach_functions.py, Note [out-of-place foreach functions in the fuzzer], ``P_FOREACH_FN``): session 44's class
(``torch._foreach_add(grads, params, alpha=wd)``, ``torch._foreach_mul``: tests/test_session44_foreach_functions.py)
in the fuzzer, the results read later and written back as torch.optim's foreach steps do. Drawn from a stream of its
own: with ``P_FOREACH_FN`` 0 every program is the one the plain statement maker draws (the pinned streams of
tests/test_session3*.py set it to 0)."""

import re

import pytest

from fusion_alias.fuzz import disjoint_views, foreach_functions, generator, oracle, source
from fusion_alias.fuzz.gen_basic import _Gen
from helpers import generated_programs

SCHEDULES = ("reads-first", "writes-first", "reverse-writes")
_FUNCTION = re.compile(r"^(t\d+(?:, t\d+)+) = torch\._foreach_(add|mul|sub|lerp|addcmul)\(")


@pytest.fixture(autouse=True)
def _no_special_values(monkeypatch):
    monkeypatch.setattr(source, "SPECIAL_VALUES", False)


@pytest.mark.parametrize("kind", foreach_functions.KINDS)
def test_the_form_off_is_the_plain_statement_maker(kind, monkeypatch):
    monkeypatch.setattr(foreach_functions, "P_FOREACH_FN", 0.0)
    drawn = generated_programs((kind,), 45101, 12, grad=True)
    plain = {k: (m[0], _Gen, m[2]) if issubclass(m[1], foreach_functions.ForeachFnGen) else m
             for k, m in generator._MAKERS.items()}  # (session 46's SavingInplaceGen is one: its gates are 0, conftest.py)
    monkeypatch.setattr(generator, "_MAKERS", plain)
    assert [oracle.program_source(p) for p in drawn] == [oracle.program_source(p)
                                                         for p in generated_programs((kind,), 45101, 12, grad=True)]


def test_the_form_is_drawn_with_its_results_read_and_written_back():
    seen, written_back, read_later = set(), 0, 0
    for kind in foreach_functions.KINDS:
        for p in generated_programs((kind,), 45102, 25, grad=True):
            for i, s in enumerate(p.stmts):
                m = _FUNCTION.match(s.code)
                if not m:
                    continue
                seen.add((m.group(2), "alpha=" in s.code, kind))
                results = m.group(1).split(", ")
                later = " ".join(t.code for t in p.stmts[i + 1:]) + " " + " ".join(p.returns)
                read_later += any(re.search(rf"\b{r}\b", later) for r in results)
                nxt = p.stmts[i + 1].code if i + 1 < len(p.stmts) else ""
                written_back += nxt.startswith("torch._foreach_") and f"[{', '.join(results)}]" in nxt
    ops = {op for op, _, _ in seen}
    assert {"add", "mul"} <= ops and ("add", True, "basic") in {(o, a, k) for o, a, k in seen}, seen
    assert {k for _, _, k in seen} == set(foreach_functions.KINDS)
    assert written_back >= 10 and read_later >= 20, (written_back, read_later)


def _holding(kind, seed, n):
    return [p for p in generated_programs((kind,), seed, n, grad=True) if any(_FUNCTION.match(s.code) for s in p.stmts)]


@pytest.mark.parametrize("kind, index", [("basic", 1), ("calls", 1), ("hidden", 1), ("hidden", 2)])
def test_programs_of_the_form_match_eager(kind, index):
    """With gradients, every schedule: eager's outputs, inputs after the call and leaf gradients."""
    p = _holding(kind, 45103, 12)[index].replace(grad=True)
    for schedule in SCHEDULES:
        status, detail = oracle.run_program(p, schedule)
        assert status == "ok", (schedule, detail)


@pytest.mark.parametrize("kind", foreach_functions.KINDS)
def test_programs_whose_eager_backward_raises_are_refused_with_the_strict_rule(kind, monkeypatch):
    """The first program of each kind holding the form: eager raises at backward (an operand the foreach function
    saved is written back into); with --strict-backward (disjoint_views.py) the jitted call must raise too, which
    it does since bc6b4d3 (refusals/foreach_saves.py)."""
    monkeypatch.setattr(disjoint_views, "STRICT_BACKWARD", True)
    p = _holding(kind, 45103, 12)[0].replace(grad=True)
    assert "eager raised at backward" in oracle.program_source(p)
    for schedule in SCHEDULES:
        status, detail = oracle.run_program(p, schedule)
        assert status in ("ok", "both-raised"), (schedule, detail)


def test_an_in_place_result_of_a_name_bound_beside_the_target_has_an_identity():
    """``t0, t1 = torch._foreach_mul(...)`` binds ``t1`` beside the statement's target; ``t2 = t1.add_(1)`` (the
    in-place result of it) raised KeyError in the hazard check (hidden --grad seed 36219, a harness error that
    stopped the run)."""
    from fusion_alias.fuzz.hazard import has_alias_hazard
    from fusion_alias.fuzz.program import Program, Stmt

    p = Program(name="beside", input_seed=0, bases=(("x0", (4,)),), args=(("a", "x0"),),
                stmts=(Stmt("t0, t1 = torch._foreach_mul([a, a], 2.0)", target="t0", reads=("a",)),
                       Stmt("t2 = t1.add_(1)", target="t2", reads=("t1",), writes="t1", inplace_result=True),
                       Stmt("a.mul_(2)", reads=("a",), writes="a")),
                returns=("t2", "t0"))
    assert has_alias_hazard(p) is False
