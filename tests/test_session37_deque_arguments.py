"""Session 37 (helper): the hidden generator's number inside a ``collections.deque`` given as an argument, another
on each call, in a new deque or in one changed in place between calls (fuzz/hidden_deque_args.py, Note [numbers
inside a deque argument, in the fuzzer], ``P_DEQUE_ARG``): the class of guard.py's Note [numbers inside a deque
argument], in the fuzzer. Drawn from a stream of its own, in place of a ``number_array`` container: with
``P_DEQUE_ARG`` 0 every program is the one it was.

With the form in every hidden program (``P_NUMBER``, ``P_ARRAY``, ``P_DEQUE_ARG`` 1, ``P_VIEW`` 0, the base kind
``number_list`` only), seed 37002 (30 programs, reference backend, 3 schedules): 27 mismatches on 495c3bb
(fusion_alias/fuzz/ of this commit), 0 / 0 / 0 now, 9 runs refused (documented self-overlapping writes; docs/
testing.md, "Session 37 (helper)").
"""

import pytest

from fusion_alias.fuzz import foreach_functions  # (session 45's forms)
from fusion_alias.fuzz import hidden_deque_args, hidden_numbers, hidden_views, oracle, source
from fusion_alias.fuzz.generator import generate_program
from helpers import generated_programs, stream_digest
from number_forms import forms_off

FORCED = {(37002, 12): "8b2a7bdb330597730b4592334bd8a0132e36b806"}  # (seed, programs) -> the digest of the hidden stream with the form forced
DEFAULT = {(37016, 40): "f113e7d605859d0ed16ae32f395fd9e8d14ff4b4"}  # every form at its default (2 hold the form)


@pytest.fixture(autouse=True)
def _no_special_values(monkeypatch):
    monkeypatch.setattr(source, "SPECIAL_VALUES", False)
    monkeypatch.setattr(foreach_functions, "P_FOREACH_FN", 0.0)  # (session 45's form: test_session45_foreach_function_form.py)


def _force(monkeypatch, p_deque=1.0):
    monkeypatch.setattr(hidden_numbers, "P_NUMBER", 1.0)
    monkeypatch.setattr(hidden_numbers, "KINDS", ("number_list",))
    monkeypatch.setattr(hidden_numbers, "P_ARRAY", 1.0)
    monkeypatch.setattr(hidden_views, "P_VIEW", 0.0)
    monkeypatch.setattr(hidden_deque_args, "P_DEQUE_ARG", p_deque)


def _kind(p):
    (kind,) = [k for h, k, _ in p.hidden if h == hidden_numbers.NAME]
    return kind


@pytest.mark.parametrize("case", list(FORCED), ids=str)
def test_the_forced_stream_is_pinned(case, monkeypatch):
    _force(monkeypatch)
    assert stream_digest(("hidden",), *case) == FORCED[case]


@pytest.mark.parametrize("case", list(DEFAULT), ids=str)
def test_the_default_stream_is_pinned(case, monkeypatch):
    forms_off(monkeypatch)  # (the number forms since session 38: number_forms.py)
    assert stream_digest(("hidden",), *case) == DEFAULT[case]


def test_the_deque_is_the_last_argument(monkeypatch):
    _force(monkeypatch)
    seen = set()
    q = hidden_deque_args.PARAM
    for p in generated_programs(("hidden",), 37002, 20):
        kind = _kind(p)
        assert kind in hidden_deque_args.KINDS
        seen.add(kind)
        assert all(v.args[-1][0] == q for v in p.all_variants)
        src = oracle.program_source(p)
        assert f"def prog({', '.join(p.params)}" in src and f"    n0 = float({q}[-1])" in src
        kept = kind == "number_deque_arg_kept"
        assert ("DQ_n0[-1] = hidden['n0']" in src) == kept
        assert ("collections.deque([1.0, n0], maxlen=2)]" in src) == (not kept)
        first, last = p.all_variants[0], p.all_variants[-1]
        assert first.args == last.args and dict(first.hidden)["n0"] != dict(last.hidden)["n0"]
    assert seen == set(hidden_deque_args.KINDS)


def test_the_form_off_leaves_the_programs_as_they_were(monkeypatch):
    _force(monkeypatch, 0.0)
    plain = generated_programs(("hidden",), 37002, 12)
    assert all(_kind(p) in hidden_numbers.CONTAINERS for p in plain)
    monkeypatch.setattr(hidden_deque_args, "P_DEQUE_ARG", 1.0)
    for p, q in zip(plain, generated_programs(("hidden",), 37002, 12)):  # the same statements, one more argument
        assert p.stmts == q.stmts and q.args[:-1] == p.args


@pytest.mark.parametrize("index", [0, 2, 3, 4])
def test_the_oracle_sees_the_class(index, monkeypatch):
    """Seed 37002 with the form forced: #0 and #4 (a new deque at each call), #2 and #3 (one
    deque changed in place) were mismatches on 495c3bb; each runs as eager now."""
    _force(monkeypatch)
    p = generate_program(37002, index, generators=("hidden",))
    for schedule in ("reads-first", "writes-first"):
        status, detail = oracle.run_program(p, schedule)
        assert status == "ok", detail
