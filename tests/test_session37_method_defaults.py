"""Session 37 (helper): the hidden generator's number in a default dict of a method, a static method, a class
method or a module's ``forward``, changed in place between calls (fuzz/hidden_methods.py, Note [a method's default
container, in the fuzzer], ``P_METHOD``): the class of default_contents.py's Note [a default container of a function
the program calls] beyond a module-level function, in the fuzzer. Drawn from a stream of its own, in place of
``number_helper``'s function: with ``P_METHOD`` 0 every program is the one it was.

With the form in every hidden program (``P_NUMBER``, ``P_HELPER``, ``P_METHOD`` 1, the base kind
``number_default`` only), seed 37003 (30 programs, reference backend, 3 schedules): 27 mismatches on 495c3bb
(fusion_alias/fuzz/ of this commit), 0 / 0 / 0 now (docs/testing.md, "Session 37 (helper)").
"""

import pytest

from fusion_alias.fuzz import foreach_functions  # (session 45's forms)
from fusion_alias.fuzz import hidden_function_args, hidden_methods, hidden_numbers, oracle, source
from fusion_alias.fuzz.generator import generate_program
from helpers import generated_programs, stream_digest
from number_forms import forms_off

FORCED = {(37003, 12): "e8a4b3c88e8ad96b469fb179c35eafd06f571bd6"}  # (seed, programs) -> the digest of the hidden stream with the form forced
DEFAULT = {(37011, 40): "c2b129eac3dda91a61f1a8e5b58471b843bd8036"}  # every form at its default (1 holds the form)


@pytest.fixture(autouse=True)
def _no_special_values(monkeypatch):
    monkeypatch.setattr(source, "SPECIAL_VALUES", False)
    monkeypatch.setattr(foreach_functions, "P_FOREACH_FN", 0.0)  # (session 45's form: test_session45_foreach_function_form.py)


def _force(monkeypatch, p_method=1.0):
    monkeypatch.setattr(hidden_numbers, "P_NUMBER", 1.0)
    monkeypatch.setattr(hidden_numbers, "KINDS", ("number_default",))
    monkeypatch.setattr(hidden_numbers, "P_HELPER", 1.0)
    monkeypatch.setattr(hidden_methods, "P_METHOD", p_method)
    monkeypatch.setattr(hidden_function_args, "P_FUNCTION_ARG", 0.0)  # (test_session37_function_arguments.py)
    forms_off(monkeypatch)  # (the number forms since session 38: number_forms.py)


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


def test_every_method_kind_reads_the_default(monkeypatch):
    _force(monkeypatch)
    seen = set()
    for p in generated_programs(("hidden",), 37003, 20):
        kind = _kind(p)
        assert kind in hidden_methods.KINDS
        seen.add(kind)
        src = oracle.program_source(p)
        assert "opts=HELPER_DEFAULTS):" in src and "class Reader_n0" in src
        assert f"    n0 = {hidden_methods.KINDS[kind][-1].format(h='n0')}" in src
        assert "    HELPER_DEFAULTS['n0'] = hidden['n0']" in src and "opts=DEFAULTS" not in src
        assert not any(s.must_refuse for s in p.stmts)
        first, last = p.all_variants[0], p.all_variants[-1]
        assert first.args == last.args and dict(first.hidden)["n0"] != dict(last.hidden)["n0"]
    assert seen == set(hidden_methods.KINDS)


def test_the_form_off_leaves_the_programs_as_they_were(monkeypatch):
    _force(monkeypatch, 0.0)
    plain = generated_programs(("hidden",), 37003, 12)
    assert all(_kind(p) == hidden_numbers.HELPER for p in plain)
    monkeypatch.setattr(hidden_methods, "P_METHOD", 1.0)
    for p, q in zip(plain, generated_programs(("hidden",), 37003, 12)):
        assert p.stmts == q.stmts and p.args == q.args


@pytest.mark.parametrize("index", [0, 1, 3, 5])
def test_the_oracle_sees_the_class(index, monkeypatch):
    """Seed 37003 with the form forced: #0 (a method), #1 (a class method), #3 (a module's ``forward``), #5
    (a static method) were mismatches on 495c3bb; each runs as eager now."""
    _force(monkeypatch)
    p = generate_program(37003, index, generators=("hidden",))
    for schedule in ("reads-first", "writes-first"):
        status, detail = oracle.run_program(p, schedule)
        assert status == "ok", detail
