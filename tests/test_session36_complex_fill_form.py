"""Session 36 (helper): a last statement filling a Python complex number into an argument (fuzz/complex_fills.py,
Note [a complex fill value in the fuzzer], ``P_COMPLEX_FILL``): the class of complex_fill_values.py's Note [a complex
fill value of a real tensor], in the fuzzer. Drawn from a stream of its own, in the ``basic`` and ``fresh``
programs only: with ``P_COMPLEX_FILL`` 0 every program is the one it was."""

import re

import pytest

from fusion_alias.fuzz import foreach_functions  # (session 45's forms)
from fusion_alias.fuzz import complex_fills, dropout_args, max_dims, oracle, source
from fusion_alias.fuzz.generator import generate_program
from helpers import generated_programs, stream_digest

# (generators, grad, seed, programs) -> sha1 of the rendered programs, both session 36 forms at their defaults
STREAMS = {
    (("basic",), False, 35406, 40): "f4d121a08a3053a621ee3fe62b68eb9956983149",  # (3 hold the form, 3 the dropout one)
    (("fresh",), False, 35407, 30): "9d4ba484b96d09e9dfc357f55f1ec7ff5a1d647c",  # (4)
    (("basic",), True, 35408, 12): "6021972ff22b30daadc242ac63f9b7cb8c083bbe",  # (1)
}


@pytest.fixture(autouse=True)
def _no_special_values(monkeypatch):
    monkeypatch.setattr(source, "SPECIAL_VALUES", False)
    monkeypatch.setattr(foreach_functions, "P_FOREACH_FN", 0.0)  # (session 45's form: test_session45_foreach_function_form.py)
    monkeypatch.setattr(max_dims, "P_MAX_DIM", 0.0)  # (a later form: its own test pins it)


_programs = generated_programs


@pytest.mark.parametrize("case", list(STREAMS), ids=lambda c: f"{(c[0] or ('all',))[0]}-grad{c[1]}-{c[2]}")
def test_the_streams_are_pinned(case):
    generators, grad, seed, n = case
    assert stream_digest(generators, seed, n, grad) == STREAMS[case]


def test_the_form_is_a_last_statement_over_an_argument(monkeypatch):
    monkeypatch.setattr(dropout_args, "P_DROPOUT", 0.0)
    monkeypatch.setattr(complex_fills, "P_COMPLEX_FILL", 1.0)
    writes, values = 0, set()
    for p in _programs(None, 35409, 60):
        forms = [s for s in p.stmts if s.target == complex_fills.NAME]
        assert bool(forms) == (p.kind in dropout_args.KINDS), p.name
        if forms:
            (s,) = forms
            assert s is p.stmts[-1] and complex_fills.NAME in p.returns
            m = re.match(r"t_cfill = (torch\.)?\(?(\w+)[.,]", s.code.replace("torch.fill_(", "torch.(").replace(
                "torch.masked_fill(", "torch.("))
            assert m and m.group(2) in p.params, s.code
            values |= {v for v in complex_fills._VALUES if s.code.endswith(f", {v})") or s.code.endswith(f"({v})")}
            if s.writes:
                writes += 1
                assert s.writes in p.returns
    assert writes >= 5 and values == set(complex_fills._VALUES)


def test_the_form_off_draws_nothing_and_leaves_the_rest(monkeypatch):
    monkeypatch.setattr(complex_fills, "P_COMPLEX_FILL", 1.0)
    drawn = _programs(None, 35406, 20)
    monkeypatch.setattr(complex_fills, "P_COMPLEX_FILL", 0.0)
    for p, plain in zip(drawn, _programs(None, 35406, 20)):
        assert not any(s.target == complex_fills.NAME for s in plain.stmts)
        if p.kind in dropout_args.KINDS:
            assert p.stmts[:-1] == plain.stmts and p.args == plain.args
            assert [r for r in p.returns if r != complex_fills.NAME][:len(plain.returns)] == list(plain.returns)
        else:
            assert p == plain


@pytest.mark.parametrize("index", [1, 2, 9, 12, 22])
def test_the_oracle_sees_the_wrong_dtype_class(index, monkeypatch):
    """Fuzz seed 35405 with the form in every program (the dropout form off): #1, #2, #9, #12 (``masked_fill`` with
    ``(1+0j)``) and #22 (``0j``) were mismatches on d3acaad (a complex64 result); each is eager's now."""
    monkeypatch.setattr(dropout_args, "P_DROPOUT", 0.0)
    monkeypatch.setattr(complex_fills, "P_COMPLEX_FILL", 1.0)
    p = generate_program(35405, index)
    assert "masked_fill(" in p.stmts[-1].code
    for schedule in ("reads-first", "writes-first"):
        status, detail = oracle.run_program(p, schedule)
        assert status == "ok", detail
