"""Session 41: the hidden generator's form for a number read from a class's dict the interpreter copies, through
``super()`` in a module, or by a method or a property through ``super()`` (fuzz/hidden_copied_reads.py, Note [a number
read from a copy the interpreter makes, in the fuzzer]): the classes of opaque_reads.py, Note [a class's dict the
interpreter copies], super_reads.py, Note [a number a module reads through super()] and super_properties.py, Note [a
property read through super()]. Forced (``P_NUMBER`` 1, ``hidden_numbers.KINDS`` ``number_default`` only,
``P_HELPER`` 0.5, the earlier forms 0, ``P_COPIED_READ`` 1), seed 41001: every kind is drawn, the form off leaves the
programs as they were, and the oracle (eager on fresh inputs, the number set between calls) sees the programs run
right under three schedules. Of programs 0-15, 13 mismatched on 294cdfc (with the fuzz files as they are now: the
five kinds, the classes holding entries that compare otherwise), 0 now; #0 is refused on both by the documented
refusal of a write into an expand()ed input, and eager raises on #2 and #15.
"""

import pytest

from fusion_alias.fuzz import hidden_copied_reads, oracle, source
from fusion_alias.fuzz.generator import generate_program
from number_forms import check_every_kind_drawn, force, number_kind

SCHEDULES = ["reads-first", "writes-first", "reverse-writes"]
SEED = 41001
MISMATCHED_BEFORE = (1, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14)


@pytest.fixture(autouse=True)
def _no_special_values(monkeypatch):
    monkeypatch.setattr(source, "SPECIAL_VALUES", False)


def _force(monkeypatch, p=1.0):
    force(monkeypatch, hidden_copied_reads, p)


def test_every_kind_is_drawn_and_the_form_off_leaves_the_programs(monkeypatch):
    check_every_kind_drawn(monkeypatch, hidden_copied_reads, SEED)


@pytest.mark.parametrize("index", MISMATCHED_BEFORE)
def test_the_oracle_sees_the_number(index, monkeypatch):
    _force(monkeypatch)
    p = generate_program(SEED, index, generators=("hidden",))
    assert number_kind(p) in hidden_copied_reads.KINDS
    for schedule in SCHEDULES:
        status, detail = oracle.run_program(p, schedule)
        assert status == "ok", detail
