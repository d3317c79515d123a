"""Session 36 (helper): a last statement reducing an argument with ``max``/``min`` along a dim that may be out of
range or a float (fuzz/max_dims.py, Note [a max's dim in the fuzzer], ``P_MAX_DIM``): the class of min_max.py's Note
[a max's dim is checked as eager checks it], in the fuzzer. Drawn from a stream of its own, in the ``basic`` and
``fresh`` programs only: with ``P_MAX_DIM`` 0 every program is the one it was."""


import pytest

from fusion_alias.fuzz import foreach_functions  # (session 45's forms)
from fusion_alias.fuzz import complex_fills, dropout_args, max_dims, oracle, source
from fusion_alias.fuzz.generator import generate_program
from helpers import generated_programs, stream_digest

# (generators, grad, seed, programs) -> sha1 of the rendered programs, the session 36 forms at their defaults
STREAMS = {
    (("basic",), False, 35413, 40): "2a924efdddea728116e0cc0d297eb6c83c56bff9",  # (3 hold the form)
    (("fresh",), False, 35414, 30): "e62fe3ed9e71c993cb0780aff03ccd9114bd6019",  # (3)
    (("basic",), True, 35415, 12): "6a86c6c40b16316b0249926db91769ba17fa58cc",  # (2)
}


@pytest.fixture(autouse=True)
def _no_special_values(monkeypatch):
    monkeypatch.setattr(source, "SPECIAL_VALUES", False)
    monkeypatch.setattr(foreach_functions, "P_FOREACH_FN", 0.0)  # (session 45's form: test_session45_foreach_function_form.py)


_programs = generated_programs


@pytest.mark.parametrize("case", list(STREAMS), ids=lambda c: f"{c[0][0]}-grad{c[1]}-{c[2]}")
def test_the_streams_are_pinned(case):
    generators, grad, seed, n = case
    assert stream_digest(generators, seed, n, grad) == STREAMS[case]


def test_the_form_off_draws_nothing_and_leaves_the_rest(monkeypatch):
    monkeypatch.setattr(max_dims, "P_MAX_DIM", 1.0)
    drawn = _programs(None, 35413, 20)
    monkeypatch.setattr(max_dims, "P_MAX_DIM", 0.0)
    held = 0
    for p, plain in zip(drawn, _programs(None, 35413, 20)):
        assert not any(s.target == max_dims.NAME for s in plain.stmts)
        if p.kind in dropout_args.KINDS:
            held += 1
            assert p.stmts[-1].target == max_dims.NAME and p.stmts[:-1] == plain.stmts
            assert p.returns == plain.returns + (max_dims.NAME,)
        else:
            assert p == plain
    assert held >= 5


@pytest.mark.parametrize("index", [9, 13, 15])
def test_the_oracle_sees_the_class(index, monkeypatch):
    """Fuzz seed 35412 with the form in every program (the other session 36 forms off): #9 (``a.max(1.5)``), #13
    (``b.max(-4)``) and #15 (``b.max(5)``) were missed rejections on d3acaad; each raises now."""
    monkeypatch.setattr(dropout_args, "P_DROPOUT", 0.0)
    monkeypatch.setattr(complex_fills, "P_COMPLEX_FILL", 0.0)
    monkeypatch.setattr(max_dims, "P_MAX_DIM", 1.0)
    p = generate_program(35412, index)
    assert p.stmts[-1].target == max_dims.NAME
    for schedule in ("reads-first", "writes-first"):
        status, detail = oracle.run_program(p, schedule)
        assert status == "both-raised", detail
