"""Session 40: the hidden generator's form for a number read through ``operator.attrgetter``, a class's whole dict,
``super()`` or ``{**D}`` (fuzz/hidden_stale_reads.py, Note [a number read around a path, in the fuzzer]): the classes
of opaque_reads.py, Note [an attribute read through attrgetter], object_shapes.py, Note [a class's dict read whole],
super_reads.py, Note [a number read through super()] and dict_unpacking.py, Note [a dict unpacked into a new one].
Forced (``P_NUMBER`` 1, ``hidden_numbers.KINDS`` ``number_default`` only, ``P_HELPER`` 0.5, the earlier forms 0,
``P_STALE_READ`` 1), seed 40001: every kind is drawn, the form off leaves the programs as they were, and the oracle
(eager on fresh inputs, the number set between calls) sees the programs run right under three schedules. Of programs
0-11, 11 mismatched on c0e9b2e (with the new fuzz files), 0 now; #2 is refused on both by the documented refusal of a
write into an expand()ed input.
"""

import pytest

from fusion_alias.fuzz import hidden_stale_reads, oracle, source
from fusion_alias.fuzz.generator import generate_program
from number_forms import check_every_kind_drawn, force, number_kind

SCHEDULES = ["reads-first", "writes-first", "reverse-writes"]


@pytest.fixture(autouse=True)
def _no_special_values(monkeypatch):
    monkeypatch.setattr(source, "SPECIAL_VALUES", False)


def _force(monkeypatch, p=1.0):
    force(monkeypatch, hidden_stale_reads, p)


def test_every_kind_is_drawn_and_the_form_off_leaves_the_programs(monkeypatch):
    check_every_kind_drawn(monkeypatch, hidden_stale_reads, 40001)


@pytest.mark.parametrize("index", [0, 1, 3, 4, 5, 6, 7, 8])  # (mismatches on c0e9b2e)
def test_the_oracle_sees_the_number(index, monkeypatch):
    _force(monkeypatch)
    p = generate_program(40001, index, generators=("hidden",))
    assert number_kind(p) in hidden_stale_reads.KINDS
    for schedule in SCHEDULES:
        status, detail = oracle.run_program(p, schedule)
        assert status == "ok", detail
