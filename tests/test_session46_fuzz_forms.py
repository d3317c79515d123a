"""Session 46 (helper-75): two bug classes of this session as fuzz forms of the ``basic``, ``hidden`` and ``calls``
generators, each from a stream of its own: one-operand einsum views written through (fuzz/einsum_view_forms.py,
Note [one-operand einsum views in the fuzzer], ``P_EINSUM_VIEW``; fusion_alias/einsum_views.py) and in-place ops that
save their result or operand, then a write into it (fuzz/saving_inplace.py, Note [in-place ops that save their
result or operand, in the fuzzer], ``P_SAVING_INPLACE``; refusals/saved_versions.py). With both gates 0 every program
is the one ``ForeachFnGen`` draws (the pinned streams)."""

import re

import pytest

from fusion_alias.fuzz import einsum_view_forms, foreach_functions, generator, oracle, saving_inplace, source
from helpers import generated_programs

KINDS = ("basic", "hidden", "calls")
_DIAGONAL = re.compile(r"torch\.einsum\('(?:\.\.\.)?\w*(\w)\w*\1\w*(?: -> |->)")
_WRITE_THROUGH = re.compile(r"^ev\d+(?:\[0\])?\.(?:mul_|zero_|sub_|add_)\(")
_SAVING = re.compile(r"^sv\d+ = ")


@pytest.fixture(autouse=True)
def _forms_off(monkeypatch):
    monkeypatch.setattr(source, "SPECIAL_VALUES", False)
    monkeypatch.setattr(foreach_functions, "P_FOREACH_FN", 0.0)
    monkeypatch.setattr(einsum_view_forms, "P_EINSUM_VIEW", 0.0)
    monkeypatch.setattr(saving_inplace, "P_SAVING_INPLACE", 0.0)


@pytest.mark.parametrize("grad", [False, True])
def test_the_forms_off_are_the_foreach_statement_maker(grad, monkeypatch):
    drawn = [oracle.program_source(p) for k in KINDS for p in generated_programs((k,), 46100, 6, grad=grad)]
    plain = {k: (m[0], foreach_functions.ForeachFnGen, m[2]) if m[1] is saving_inplace.SavingInplaceGen else m
             for k, m in generator._MAKERS.items()}
    monkeypatch.setattr(generator, "_MAKERS", plain)
    assert drawn == [oracle.program_source(p) for k in KINDS for p in generated_programs((k,), 46100, 6, grad=grad)]


def test_einsum_views_are_drawn_written_through_and_read(monkeypatch):
    monkeypatch.setattr(einsum_view_forms, "P_EINSUM_VIEW", 1.0)
    diagonal = writes = reads = 0
    for kind in KINDS:
        for p in generated_programs((kind,), 46101, 6):
            codes = [s.code for s in p.stmts]
            diagonal += sum(bool(_DIAGONAL.search(c)) for c in codes)
            writes += sum(bool(_WRITE_THROUGH.match(c)) for c in codes)
            reads += sum(c.startswith("er") for c in codes)
            assert all(m.group(1) in p.returns for c in codes if (m := re.match(r"^(e[rv]\d+) = ", c)))
    assert diagonal >= 5 and writes >= 5 and reads >= 5, (diagonal, writes, reads)


def test_saving_ops_are_drawn_written_into_and_tagged(monkeypatch):
    monkeypatch.setattr(saving_inplace, "P_SAVING_INPLACE", 1.0)
    result = operand = written = 0
    for kind in KINDS:
        for p in generated_programs((kind,), 46101, 6, grad=True):
            codes = [s.code for s in p.stmts]
            saving = [c for c in codes if _SAVING.match(c)]
            assert saving and saving_inplace.TAG in p.tags
            result += sum("inplace=True" in c or "sgn_" in c or "exp" in c or "sigmoid_" in c for c in saving)
            operand += sum(bool(re.search(r"_\((?:sp|sv|t|[a-d]|h)\w*\)$", c)) for c in saving)
            written += sum(bool(re.match(r"^\w+(?:\[0\])?\.(?:mul_\(0\.5\)|add_\(1\.0\)|zero_\(\)|sub_\(0\.25\))$", c))
                           for c in codes)
    assert result >= 3 and operand >= 3 and written >= 5, (result, operand, written)


def _run_clean(p, grad):
    p = p.replace(grad=grad)
    statuses = []
    for schedule in ("reads-first", "writes-first"):
        status, detail = oracle.run_program(p, schedule)
        assert status in ("ok", "both-raised") or (status == "jit-raised" and "AliasInputError" in detail), detail
        statuses.append(status)
    return statuses


def _holding(pattern, grad, n=3):
    """The first ``n`` programs of seed 46102 (basic, calls, hidden, in turn) holding a statement ``pattern`` matches."""
    found = []
    for i in range(12):
        for kind in ("basic", "calls", "hidden"):
            p = generated_programs((kind,), 46102, i + 1, grad=grad)[i]
            if any(pattern.search(s.code) for s in p.stmts):
                found.append(p)
            if len(found) == n:
                return found
    return found


@pytest.mark.parametrize("grad", [False, True])
def test_einsum_view_programs_run_clean(grad, monkeypatch):
    monkeypatch.setattr(einsum_view_forms, "P_EINSUM_VIEW", 0.5)
    programs = _holding(_DIAGONAL, grad)
    assert len(programs) == 3
    for p in programs:
        _run_clean(p, grad)


@pytest.mark.parametrize("grad", [False, True])
def test_saving_inplace_programs_run_clean_and_are_refused_where_eager_raises_at_backward(grad, monkeypatch):
    """With gradients, eager raises at backward in some (a saved result or operand written later) and fusion_alias
    refuses them all (the strict rule: a missed rejection would fail)."""
    monkeypatch.setattr(saving_inplace, "P_SAVING_INPLACE", 0.5)
    programs = _holding(_SAVING, grad)
    assert len(programs) == 3 and all(saving_inplace.TAG in p.tags for p in programs)
    statuses = [st for p in programs for st in _run_clean(p, grad)]
    assert not grad or "both-raised" in statuses, statuses
