"""Session 39 (helper): the hidden generator's form for a number read through a call Thunder runs opaquely
(fuzz/hidden_opaque_reads.py, Note [a number read through an opaque call, in the fuzzer]): the classes of
opaque_reads.py, Note [a dict or an attribute read through an opaque call], Note [a container an opaque builtin
reads]. Forced (``P_NUMBER`` 1, ``hidden_numbers.KINDS`` ``number_default`` only, ``P_HELPER`` 0.5, ``P_METHOD``,
``P_FUNCTION_ARG`` and ``P_OWN_DEFAULT`` 0, ``P_OPAQUE_READ`` 1), seed 39001, 30 programs (its seven kinds), 3
schedules: 24 programs (72 runs) mismatched on 36749b7 (with the new fuzz files), 0 after the fixes (on both, the 12
runs of #4, #10, #13, #22 refused by the documented operand-overlap and self-overlap refusals; eager itself raises on
#18 and #21).
"""

import pytest

from fusion_alias.fuzz import (hidden_function_args, hidden_methods, hidden_numbers, hidden_opaque_reads,
                               hidden_own_defaults, oracle, source)
from fusion_alias.fuzz.generator import generate_program
from helpers import generated_programs

SCHEDULES = ["reads-first", "writes-first", "reverse-writes"]


@pytest.fixture(autouse=True)
def _no_special_values(monkeypatch):
    monkeypatch.setattr(source, "SPECIAL_VALUES", False)


def _force(monkeypatch, p=1.0):
    monkeypatch.setattr(hidden_numbers, "P_NUMBER", 1.0)
    monkeypatch.setattr(hidden_numbers, "KINDS", ("number_default",))
    monkeypatch.setattr(hidden_numbers, "P_HELPER", 0.5)
    monkeypatch.setattr(hidden_methods, "P_METHOD", 0.0)
    monkeypatch.setattr(hidden_function_args, "P_FUNCTION_ARG", 0.0)
    monkeypatch.setattr(hidden_own_defaults, "P_OWN_DEFAULT", 0.0)
    monkeypatch.setattr(hidden_opaque_reads, "P_OPAQUE_READ", p)
    monkeypatch.setattr("fusion_alias.fuzz.hidden_stale_reads.P_STALE_READ", 0.0)  # (session 40: test_session40_stale_read_form.py)
    monkeypatch.setattr("fusion_alias.fuzz.hidden_copied_reads.P_COPIED_READ", 0.0)  # (session 41: test_session41_copied_read_form.py)


def _kind(p):
    (kind,) = [k for h, k, _ in p.hidden if h == hidden_numbers.NAME]
    return kind


def test_every_kind_is_drawn_and_the_form_off_leaves_the_programs(monkeypatch):
    _force(monkeypatch, 0.0)
    plain = generated_programs(("hidden",), 39001, 30)
    _force(monkeypatch)
    seen = set()
    for p, q in zip(plain, generated_programs(("hidden",), 39001, 30)):
        assert _kind(p) in hidden_opaque_reads.PARENTS
        kind = _kind(q)
        kept = tuple(st for st in p.stmts if st.must_refuse != hidden_numbers.CHANGED)  # (a base kind's only)
        assert kind in hidden_opaque_reads.KINDS and kept == q.stmts and p.args == q.args
        seen.add(kind)
        src = oracle.program_source(q)
        assert hidden_numbers.install("n0", kind) in src and f"    n0 = {hidden_numbers.access('n0', kind)}" in src
        first, last = q.all_variants[0], q.all_variants[-1]  # (hidden_numbers._with_extra: a stale number shows)
        assert first.args == last.args and dict(first.hidden)["n0"] != dict(last.hidden)["n0"]
    assert seen == set(hidden_opaque_reads.KINDS)


@pytest.mark.parametrize("index", [0, 1, 2, 3, 5, 6, 7, 8])  # (mismatches on 36749b7)
def test_the_oracle_sees_the_number(index, monkeypatch):
    _force(monkeypatch)
    p = generate_program(39001, index, generators=("hidden",))
    assert _kind(p) in hidden_opaque_reads.KINDS
    for schedule in SCHEDULES:
        status, detail = oracle.run_program(p, schedule)
        assert status == "ok", detail
