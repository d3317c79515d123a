"""Session 37 (helper): the hidden generator's number drawn from an iterator kept in an object's attribute, given as
an argument or held in the function's closure, a new one before each call (fuzz/hidden_iterators.py, Note [an
iterator that outlives the call, in the fuzzer], ``P_HOLDER``): the class of outside_reads.py's Note [an iterator
that outlives the call] beyond a global dict, in the fuzzer; fusion_alias must refuse each program by name. Drawn
from a stream of its own, in place of ``number_iterator``'s global dict: with ``P_HOLDER`` 0 every program is the
one it was.

With the form in every hidden program (``P_NUMBER``, ``P_ITERATOR``, ``P_HOLDER`` 1, the base kind ``number_dict``
only), seed 37004 (30 programs, reference backend, 3 schedules): 30 missed rejections on 495c3bb (fusion_alias/fuzz/ of
this commit), 0 / 0 / 0 now, all 90 runs eager accepts refused by name (docs/testing.md, "Session 37 (helper)").
"""

import pytest

from fusion_alias.fuzz import foreach_functions  # (session 45's forms)
from fusion_alias.fuzz import hidden_iterators, hidden_numbers, oracle, source
from fusion_alias.fuzz.generator import generate_program
from helpers import generated_programs, stream_digest
from number_forms import forms_off

FORCED = {(37004, 12): "6cff7f87fb6e27f6cd6890acc7d39231c6a779cf"}  # (seed, programs) -> the digest of the hidden stream with the form forced
DEFAULT = {(37018, 40): "0a11b193f2d0050c197a3fb3fb1b94771c996040"}  # every form at its default (1 holds the form)


@pytest.fixture(autouse=True)
def _no_special_values(monkeypatch):
    monkeypatch.setattr(source, "SPECIAL_VALUES", False)
    monkeypatch.setattr(foreach_functions, "P_FOREACH_FN", 0.0)  # (session 45's form: test_session45_foreach_function_form.py)


def _force(monkeypatch, p_holder=1.0):
    monkeypatch.setattr(hidden_numbers, "P_NUMBER", 1.0)
    monkeypatch.setattr(hidden_numbers, "KINDS", ("number_dict",))
    monkeypatch.setattr(hidden_numbers, "P_ITERATOR", 1.0)
    monkeypatch.setattr(hidden_iterators, "P_HOLDER", p_holder)


def _kind(p):
    (kind,) = [k for h, k, _ in p.hidden if h == hidden_numbers.NAME]
    return kind


@pytest.mark.parametrize("case", list(FORCED), ids=str)
def test_the_forced_stream_is_pinned(case, monkeypatch):
    _force(monkeypatch)
    assert stream_digest(("hidden",), *case) == FORCED[case]


@pytest.mark.parametrize("case", list(DEFAULT), ids=str)
def test_the_default_stream_is_pinned(case, monkeypatch):
    forms_off(monkeypatch, since=39)  # (number_forms.py)
    assert stream_digest(("hidden",), *case) == DEFAULT[case]


def test_every_holder_is_drawn_and_must_be_refused(monkeypatch):
    _force(monkeypatch)
    seen = set()
    for p in generated_programs(("hidden",), 37004, 20):
        kind = _kind(p)
        assert kind in hidden_iterators.KINDS
        seen.add(kind)
        src = oracle.program_source(p)
        assert f"    n0 = {hidden_numbers.access('n0', kind)}" in src
        assert [s.must_refuse for s in p.stmts if s.must_refuse] == [hidden_iterators.REFUSAL]
        assert (p.params[-1] == hidden_iterators.PARAM) == (kind == "number_iterator_arg")
        assert ("    SET_CLOSURE['n0'](iter([hidden['n0']]))" in src) == (kind == hidden_iterators.CLOSURE)
    assert seen == set(hidden_iterators.KINDS)


def test_the_form_off_leaves_the_programs_as_they_were(monkeypatch):
    _force(monkeypatch, 0.0)
    plain = generated_programs(("hidden",), 37004, 12)
    assert all(_kind(p) == hidden_numbers.ITERATOR for p in plain)
    monkeypatch.setattr(hidden_iterators, "P_HOLDER", 1.0)
    for p, q in zip(plain, generated_programs(("hidden",), 37004, 12)):
        assert [s.code for s in p.stmts] == [s.code for s in q.stmts]


@pytest.mark.parametrize("index", [0, 1, 8])
def test_the_oracle_sees_the_class(index, monkeypatch):
    """Seed 37004 with the form forced: #0 (an attribute), #1 (a closure), #8 (an argument) were missed
    rejections on 495c3bb; each is refused by name now."""
    _force(monkeypatch)
    p = generate_program(37004, index, generators=("hidden",))
    for schedule in ("reads-first", "writes-first"):
        status, detail = oracle.run_program(p, schedule)
        assert status == "jit-raised" and oracle.exception_type(detail).endswith("TracingRefusal"), detail
        assert "iterator that outlives the call" in detail
