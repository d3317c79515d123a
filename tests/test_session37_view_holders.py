"""Session 37 (helper): the hidden generator's number in a ``bytearray``, a writable ``memoryview`` or a dict's
``keys()``/``values()``/``items()`` view kept apart from its dict, changed in place between calls
(fuzz/hidden_views.py, Note [a number in a buffer or a dict view, in the fuzzer], ``P_VIEW``): the class of
default_contents.py's Note [a mutable sequence Thunder does not unpack], in the fuzzer. Drawn from a stream of its
own, in place of a ``number_array`` container: with ``P_VIEW`` 0 every program is the one it was.

With the form in every hidden program (``P_NUMBER``, ``P_ARRAY``, ``P_VIEW`` 1, the base kind ``number_list``
only), seed 37001 (30 programs, reference backend, 3 schedules): 20 mismatches and 6 unexpected errors (a
writable memoryview: "cannot hash") on 495c3bb (fusion_alias/fuzz/ of this commit), 0 / 0 / 0 now, 6 runs refused
(documented self-overlapping writes; docs/testing.md, "Session 37 (helper)").
"""

import pytest

from fusion_alias.fuzz import foreach_functions  # (session 45's forms)
from fusion_alias.fuzz import hidden_deque_args, hidden_numbers, hidden_views, oracle, source
from fusion_alias.fuzz.generator import generate_program
from helpers import generated_programs, stream_digest
from number_forms import forms_off

FORCED = {(37001, 12): "8fc612ad8cb124cb4c6f0713fdf04d4edab54bd7"}  # (seed, programs) -> the digest of the hidden stream with the form forced
DEFAULT = {(37013, 40): "45174cf170006f69d903e11fc2c8aacb7fdda6dd"}  # every form at its default (1 holds the form)


@pytest.fixture(autouse=True)
def _no_special_values(monkeypatch):
    monkeypatch.setattr(source, "SPECIAL_VALUES", False)
    monkeypatch.setattr(foreach_functions, "P_FOREACH_FN", 0.0)  # (session 45's form: test_session45_foreach_function_form.py)


def _force(monkeypatch, p_view=1.0):
    monkeypatch.setattr(hidden_numbers, "P_NUMBER", 1.0)
    monkeypatch.setattr(hidden_numbers, "KINDS", ("number_list",))
    monkeypatch.setattr(hidden_numbers, "P_ARRAY", 1.0)
    monkeypatch.setattr(hidden_views, "P_VIEW", p_view)


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


def test_every_view_is_drawn_and_read_apart_from_its_holder(monkeypatch):
    _force(monkeypatch)
    seen = set()
    for p in generated_programs(("hidden",), 37001, 30):
        kind = _kind(p)
        assert kind in hidden_views.KINDS
        seen.add(kind)
        src = oracle.program_source(p)
        assert f"    n0 = {hidden_numbers.access('n0', kind)}" in src and "t_n0 = " in src
        assert hidden_numbers.install("n0", kind) in src
        # the last variant: the first one's aliasing with another number (a stale number shows)
        first, last = p.all_variants[0], p.all_variants[-1]
        assert first.args == last.args and dict(first.hidden)["n0"] != dict(last.hidden)["n0"]
    assert seen == set(hidden_views.KINDS)


def test_the_form_off_leaves_the_programs_as_they_were(monkeypatch):
    _force(monkeypatch, 0.0)
    monkeypatch.setattr(hidden_deque_args, "P_DEQUE_ARG", 0.0)
    plain = generated_programs(("hidden",), 37001, 12)
    assert all(_kind(p) in hidden_numbers.CONTAINERS for p in plain)
    monkeypatch.setattr(hidden_views, "P_VIEW", 1.0)
    drawn = generated_programs(("hidden",), 37001, 12)
    for p, q in zip(plain, drawn):  # the same statements, another holder
        assert p.stmts == q.stmts and p.args == q.args


@pytest.mark.parametrize("index", [0, 4, 5, 13, 20])
def test_the_oracle_sees_the_class(index, monkeypatch):
    """Seed 37001 with the form forced: #0 (values), #4 (bytearray), #5 (keys) and #13 (items) were mismatches on
    495c3bb, #20 (memoryview) raised "cannot hash writable memoryview"; each runs as eager now."""
    _force(monkeypatch)
    p = generate_program(37001, index, generators=("hidden",))
    for schedule in ("reads-first", "writes-first"):
        status, detail = oracle.run_program(p, schedule)
        assert status == "ok", detail
