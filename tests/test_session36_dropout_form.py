"""Session 36 (helper): a last statement calling a dropout function in place or in evaluation mode, with arguments
eager may refuse (fuzz/dropout_args.py, Note [a dropout's arguments in the fuzzer], ``P_DROPOUT``): the class of
dropout_checks.py's Note [a dropout's arguments are checked before the shortcut], in the fuzzer. Drawn from a
stream of its own, in the ``basic`` and ``fresh`` programs only (the generators whose streams no older test
pins): with ``P_DROPOUT`` 0 every program is the one it was. (The streams pinned here are of one generator each:
the default mix holds ``hidden`` programs, whose generator another session changes.)"""

import re

import pytest

from fusion_alias.fuzz import foreach_functions  # (session 45's forms)
from fusion_alias.fuzz import complex_fills, dropout_args, max_dims, oracle, source
from fusion_alias.fuzz.generator import generate_program
from helpers import generated_programs, stream_digest

# (generators, grad, seed, programs) -> sha1 of the rendered programs, the form at its default probability
STREAMS = {
    (("basic",), False, 35401, 40): "6e3e513d648b37285cba106fd839786ad52ff978",  # (4 hold the form, 1 an rrelu)
    (("fresh",), False, 35402, 30): "0a4ca7689040bc3a32bf098907316d8add12616b",
    (("basic",), True, 35403, 12): "ecd1c4c65950b5979a6fc6221a4bba6e882c63d8",  # (1, an rrelu)
}
_FORM = re.compile(r"^t_drop = torch\.nn\.functional\.(\w+)\((\w+)(\.reshape\(-1\))?, (-?[\d.]+), (?:[\d.]+, )?"
                   r"training=(True|False), inplace=(True|False)\)$")


@pytest.fixture(autouse=True)
def _no_special_values(monkeypatch):
    monkeypatch.setattr(source, "SPECIAL_VALUES", False)
    monkeypatch.setattr(foreach_functions, "P_FOREACH_FN", 0.0)  # (session 45's form: test_session45_foreach_function_form.py)
    monkeypatch.setattr(complex_fills, "P_COMPLEX_FILL", 0.0)  # (a later form: its own test pins it)
    monkeypatch.setattr(max_dims, "P_MAX_DIM", 0.0)  # (a later form: its own test pins it)


_programs = generated_programs


@pytest.mark.parametrize("case", list(STREAMS), ids=lambda c: f"{(c[0] or ('all',))[0]}-grad{c[1]}-{c[2]}")
def test_the_streams_are_pinned(case):
    generators, grad, seed, n = case
    assert stream_digest(generators, seed, n, grad) == STREAMS[case]


def test_the_form_is_a_last_statement_over_an_argument(monkeypatch):
    monkeypatch.setattr(dropout_args, "P_DROPOUT", 1.0)
    seen, refused_p, rank = set(), 0, 0
    for p in _programs(None, 35404, 80):
        forms = [s for s in p.stmts if s.target == dropout_args.NAME]
        assert bool(forms) == (p.kind in dropout_args.KINDS), p.name
        if forms:
            (s,) = forms
            assert s is p.stmts[-1] and p.returns[-1] == dropout_args.NAME
            m = _FORM.match(s.code)
            assert m and m.group(2) in p.params, s.code
            seen.add(m.group(1))
            refused_p += m.group(4) in ("-0.5", "1.5")
            rank += bool(m.group(3))
    assert seen == {*dropout_args._FUNCTIONS, "rrelu"} and refused_p >= 5 and rank >= 1


def test_the_form_off_draws_nothing_and_leaves_the_rest(monkeypatch):
    monkeypatch.setattr(dropout_args, "P_DROPOUT", 1.0)
    drawn = _programs(None, 35401, 20)
    monkeypatch.setattr(dropout_args, "P_DROPOUT", 0.0)
    for p, plain in zip(drawn, _programs(None, 35401, 20)):
        assert not any(s.target == dropout_args.NAME for s in plain.stmts)
        if p.kind in dropout_args.KINDS:
            assert p.stmts[:-1] == plain.stmts and p.returns[:-1] == plain.returns and p.args == plain.args
        else:
            assert p == plain


@pytest.mark.parametrize("index", [11])
def test_the_oracle_sees_the_missed_rejection_class(index, monkeypatch):
    """Fuzz seed 35400 with the form in every program: #11 (``dropout1d(b, 1.5, training=False, inplace=True)``) was
    a missed rejection on d3acaad (and #5, an ``edges`` program, before the form left that generator); it raises
    now."""
    monkeypatch.setattr(dropout_args, "P_DROPOUT", 1.0)
    (p,) = [generate_program(35400, i) for i in (index,)]
    assert "dropout1d(b, 1.5, training=False, inplace=True)" in p.stmts[-1].code
    for schedule in ("reads-first", "writes-first"):
        status, detail = oracle.run_program(p, schedule)
        assert status == "both-raised", detail


@pytest.mark.parametrize("index", [12, 25])
def test_the_oracle_sees_the_rrelu_class(index, monkeypatch):
    """Fuzz seed 35411 with the form in every program and every statement an rrelu (``P_RRELU`` 1): #12 and #25
    (``rrelu(x, 0.5, 0.1, training=False, ...)``) were missed rejections on d3acaad; both raise now."""
    monkeypatch.setattr(dropout_args, "P_DROPOUT", 1.0)
    monkeypatch.setattr(dropout_args, "P_RRELU", 1.0)
    p = generate_program(35411, index)
    assert "rrelu(" in p.stmts[-1].code and ", 0.5, 0.1, training=False" in p.stmts[-1].code
    for schedule in ("reads-first", "writes-first"):
        status, detail = oracle.run_program(p, schedule)
        assert status == "both-raised", detail
