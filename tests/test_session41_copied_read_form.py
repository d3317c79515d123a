"""Session 41: the hidden generator's form for a number read from a class's dict the interpreter copies, or through
``super()`` in a module (fuzz/hidden_copied_reads.py, Note [a number read from a copy the interpreter makes, in the
fuzzer]): the classes of opaque_reads.py, Note [a class's dict the interpreter copies] and super_reads.py, Note [a
number a module reads through super()]. Forced (``P_NUMBER`` 1, ``hidden_numbers.KINDS`` ``number_default`` only,
``P_HELPER`` 0.5, the earlier forms 0, ``P_COPIED_READ`` 1), seed 41001: every kind is drawn, the form off leaves the
programs as they were, and the oracle (eager on fresh inputs, the number set between calls) sees the programs run
right under three schedules. Of programs 0-11 and 19-21, 12 mismatched on 814145d (with the new fuzz files), 0 now;
#0 is refused on both by the documented refusal of a write into an expand()ed input, and eager raises on #2.
"""

import pytest

from fusion_alias.fuzz import (hidden_copied_reads, hidden_function_args, hidden_methods, hidden_numbers,
                               hidden_opaque_reads, hidden_own_defaults, hidden_stale_reads, oracle, source)
from fusion_alias.fuzz.generator import generate_program
from helpers import generated_programs

SCHEDULES = ["reads-first", "writes-first", "reverse-writes"]
SEED = 41001
MISMATCHED_BEFORE = (1, 3, 4, 5, 6, 7, 8, 9, 10, 11, 19, 20, 21)  # (19-21: number_unpacked_class_dict)


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
    monkeypatch.setattr(hidden_opaque_reads, "P_OPAQUE_READ", 0.0)
    monkeypatch.setattr(hidden_stale_reads, "P_STALE_READ", 0.0)
    monkeypatch.setattr(hidden_copied_reads, "P_COPIED_READ", p)


def _kind(p):
    (kind,) = [k for h, k, _ in p.hidden if h == hidden_numbers.NAME]
    return kind


def test_every_kind_is_drawn_and_the_form_off_leaves_the_programs(monkeypatch):
    _force(monkeypatch, 0.0)
    plain = generated_programs(("hidden",), SEED, 30)
    _force(monkeypatch)
    seen = set()
    for p, q in zip(plain, generated_programs(("hidden",), SEED, 30)):
        assert _kind(p) in hidden_copied_reads.PARENTS
        kind = _kind(q)
        kept = tuple(st for st in p.stmts if st.must_refuse != hidden_numbers.CHANGED)  # (a base kind's only)
        assert kind in hidden_copied_reads.KINDS and kept == q.stmts and p.args == q.args
        seen.add(kind)
        src = oracle.program_source(q)
        assert hidden_numbers.install("n0", kind) in src and f"    n0 = {hidden_numbers.access('n0', kind)}" in src
        first, last = q.all_variants[0], q.all_variants[-1]  # (hidden_numbers._with_extra: a stale number shows)
        assert first.args == last.args and dict(first.hidden)["n0"] != dict(last.hidden)["n0"]
    assert seen == set(hidden_copied_reads.KINDS)


@pytest.mark.parametrize("index", MISMATCHED_BEFORE)
def test_the_oracle_sees_the_number(index, monkeypatch):
    _force(monkeypatch)
    p = generate_program(SEED, index, generators=("hidden",))
    assert _kind(p) in hidden_copied_reads.KINDS
    for schedule in SCHEDULES:
        status, detail = oracle.run_program(p, schedule)
        assert status == "ok", detail
