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

from fusion_alias.fuzz import hidden_opaque_reads, oracle, source
from fusion_alias.fuzz.generator import generate_program
from number_forms import check_every_kind_drawn, force, number_kind

SCHEDULES = ["reads-first", "writes-first", "reverse-writes"]


@pytest.fixture(autouse=True)
def _no_special_values(monkeypatch):
    monkeypatch.setattr(source, "SPECIAL_VALUES", False)


def _force(monkeypatch, p=1.0):
    force(monkeypatch, hidden_opaque_reads, p)


def test_every_kind_is_drawn_and_the_form_off_leaves_the_programs(monkeypatch):
    check_every_kind_drawn(monkeypatch, hidden_opaque_reads, 39001)


@pytest.mark.parametrize("index", [0, 1, 2, 3, 5, 6, 7, 8])  # (mismatches on 36749b7)
def test_the_oracle_sees_the_number(index, monkeypatch):
    _force(monkeypatch)
    p = generate_program(39001, index, generators=("hidden",))
    assert number_kind(p) in hidden_opaque_reads.KINDS
    for schedule in SCHEDULES:
        status, detail = oracle.run_program(p, schedule)
        assert status == "ok", detail
