"""Session 38 (helper): the hidden generator's form for a function or a class held in ``prog``'s own default, for
a keyword-only default set in place, for a closure cell of a function in a called helper's default, for a class
attribute read through ``type()`` and for an object whose class changes (fuzz/hidden_own_defaults.py, Note [a
function or a class in the program's own default, in the fuzzer]); the classes of mutable_defaults.py, Note [a
function or a class in the jitted function's own default], and default_contents.py, Note [a keyword default set in place], Note [the closure of a function held in a default];
type_reads.py, Note [a class reached through type()]; object_shapes.py, Note [an object's class].

Forced (``P_NUMBER`` 1, ``hidden_numbers.KINDS`` ``number_default`` only, ``P_HELPER`` 0.5, ``P_METHOD`` and
``P_FUNCTION_ARG`` 0, ``P_OWN_DEFAULT`` 1), seed 38001, 30 programs (its seven kinds), reference backend, 3
schedules: 27 programs (81 runs) mismatched on b7efa12, 0 / 0 / 0 after the fixes (the 6 runs of #9 and #26 refused
on both by the documented operand-overlap refusal; #13 right on both).
"""

import pytest

from fusion_alias.fuzz import foreach_functions  # (session 45's forms)
from fusion_alias.fuzz import hidden_numbers, hidden_own_defaults, oracle, source
from fusion_alias.fuzz.generator import generate_program
from helpers import generated_programs, stream_digest
from number_forms import force, number_kind

SCHEDULES = ["reads-first", "writes-first", "reverse-writes"]
FORCED = {(38001, 12): "713624d008c19e29b539ff10b779e349fd66eb96"}  # (seed, programs) -> the digest of the hidden stream with the form forced


@pytest.fixture(autouse=True)
def _no_special_values(monkeypatch):
    monkeypatch.setattr(source, "SPECIAL_VALUES", False)
    monkeypatch.setattr(foreach_functions, "P_FOREACH_FN", 0.0)  # (session 45's form: test_session45_foreach_function_form.py)


def _force(monkeypatch, p_own=1.0):
    force(monkeypatch, hidden_own_defaults, p_own)


@pytest.mark.parametrize("case", list(FORCED), ids=str)
def test_the_forced_stream_is_pinned(case, monkeypatch):
    _force(monkeypatch)
    assert stream_digest(("hidden",), *case) == FORCED[case]


_PARAMS = {"number_own_default_function": "f_n0=read_n0):", "number_own_default_class": "C_n0=Cfg_n0):",
           "number_own_keyword_default": "f_n0=read_n0):", "number_keyword_default": None,
           "number_default_closure": None, "number_type_attribute": None, "number_object_class": None}


def test_every_kind_is_drawn_and_the_form_off_leaves_the_programs(monkeypatch):
    _force(monkeypatch, 0.0)
    plain = generated_programs(("hidden",), 38001, 20)
    _force(monkeypatch)
    seen = set()
    for p, q in zip(plain, generated_programs(("hidden",), 38001, 20)):
        assert number_kind(p) in hidden_own_defaults.PARENTS
        kind = number_kind(q)
        kept = tuple(st for st in p.stmts if st.must_refuse != hidden_numbers.CHANGED)  # (a base kind's only)
        assert kind in hidden_own_defaults.KINDS and kept == q.stmts and p.args == q.args
        seen.add(kind)
        src = oracle.program_source(q)
        assert hidden_numbers.install("n0", kind) in src and f"    n0 = {hidden_numbers.access('n0', kind)}" in src
        head = next(line.strip() for line in src.splitlines() if line.strip().startswith("def prog("))
        assert (_PARAMS[kind] is None and "=" not in head) or head.endswith(_PARAMS[kind] or "")
        first, last = q.all_variants[0], q.all_variants[-1]  # (hidden_numbers._with_extra: a stale number shows)
        assert first.args == last.args and dict(first.hidden)["n0"] != dict(last.hidden)["n0"]
    assert seen == set(hidden_own_defaults.KINDS)


@pytest.mark.parametrize("index", [0, 1, 2, 4, 10, 12])
def test_the_oracle_sees_the_class(index, monkeypatch):
    """Seed 38001 with the form forced: #0 (a class attribute read through ``type()``), #1 (a function in
    ``prog``'s default), #2 (a class there), #4 (an object whose class changes), #10 (a global function's keyword
    default set in place), #12 (a closure cell of a function in a called helper's default) were mismatches on
    b7efa12; each runs as eager now."""
    _force(monkeypatch)
    p = generate_program(38001, index, generators=("hidden",))
    assert number_kind(p) in hidden_own_defaults.KINDS
    for schedule in SCHEDULES:
        status, detail = oracle.run_program(p, schedule)
        assert status == "ok", detail
