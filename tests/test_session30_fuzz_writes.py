"""Session 30: the fuzzer's ``--write-outputs`` mode (oracle.py, Note [outputs written after the call])."""

import pytest
import torch

from fusion_alias import fuzz
from fusion_alias.fuzz import oracle


def _program(stmts, returns, **kw):
    return fuzz.Program(name="handmade", input_seed=0, bases=(("x0", (4, 4)),), args=(("a", "x0"),),
                        stmts=tuple(fuzz.Stmt(c, **k) for c, k in stmts), returns=returns, **kw)


def _outputs_copied(fn, schedule):
    """A broken system: right values, but every output a copy (an output that is an input's memory in eager
    is not)."""

    def run(*args):
        out = fn(*args)
        out = out if isinstance(out, tuple) else (out,)
        return tuple(o.clone() if isinstance(o, torch.Tensor) else o for o in out)

    return run


RETURNS_ITS_INPUT = _program([("t0 = a.mul_(2)", dict(target="t0", reads=("a",), writes="a"))], ("t0",))


def test_outputs_written_after_the_call_show_an_output_that_is_a_copy(monkeypatch):
    assert fuzz.run_program(RETURNS_ITS_INPUT, "reads-first", make_jit=_outputs_copied)[0] == "ok"  # values agree
    monkeypatch.setattr(oracle, "WRITE_OUTPUTS", True)
    assert fuzz.run_program(RETURNS_ITS_INPUT, "reads-first", system="eager")[0] == "ok"
    status, detail = fuzz.run_program(RETURNS_ITS_INPUT, "reads-first", make_jit=_outputs_copied)
    assert status == "mismatch", detail


def test_the_driver_says_whether_outputs_are_written(monkeypatch):
    assert "WRITE_OUTPUTS = False" in oracle.program_source(RETURNS_ITS_INPUT)
    monkeypatch.setattr(oracle, "WRITE_OUTPUTS", True)
    assert "WRITE_OUTPUTS = True" in oracle.program_source(RETURNS_ITS_INPUT)


@pytest.mark.parametrize("grad", [False, True])
def test_fusion_alias_agrees_with_outputs_written_after_the_call(monkeypatch, grad):
    monkeypatch.setattr(oracle, "WRITE_OUTPUTS", True)
    report = fuzz.run_fuzz(programs=12, seed=30030 + grad, grad=grad, do_shrink=False, allow_jit_errors=True,
                           generators=("basic", "hidden", "calls"))
    assert not report.mismatches and not report.missed_rejections, report.summary()
