"""Session 45 (helper-73): the ``modules`` generator's buffers rebound in the forward to a view made in the call
(fuzz/modules_view_rebinds.py, Note [a buffer rebound to a view made in the call, generated], ``P_VIEW_REBIND``):
session 44's class (``self.x = self.x.view(4)``, ``self.x = self.b[:]``: tests/test_session44_buffer_rebound_to_a_view.py)
in the fuzzer, and a driver that also compares, per state name, whether it is the object it was before the call (the
class eager tells apart from a kept buffer by object identity only). Drawn from a stream of its own: with
``P_VIEW_REBIND`` 0 every program is the one it was."""

import re

import pytest

from fusion_alias.fuzz import modules_view_rebinds, oracle, source
from fusion_alias.fuzz.generator import generate_program
from helpers import generated_programs

SCHEDULES = ("reads-first", "writes-first", "reverse-writes")
_REBIND = re.compile(r"^(?:with torch\.no_grad\(\): )?(m\.\w+) = (m\.\w+)(?:\.view\(|\[:\]|\.detach\(\)|\.t\(\)|$)")


@pytest.fixture(autouse=True)
def _no_special_values(monkeypatch):
    monkeypatch.setattr(source, "SPECIAL_VALUES", False)


def _holding(programs):
    return [p for p in programs if modules_view_rebinds.MARKER in dict(p.tags)["module_src"]]


def test_the_form_off_draws_nothing(monkeypatch):
    monkeypatch.setattr(modules_view_rebinds, "P_VIEW_REBIND", 0.0)
    for p in generated_programs(("modules",), 45201, 10):
        assert "the object it was before the call" not in oracle.program_source(p)


def test_the_form_rebinds_state_to_views_and_the_driver_compares_objects(monkeypatch):
    monkeypatch.setattr(modules_view_rebinds, "P_VIEW_REBIND", 1.0)
    programs = generated_programs(("modules",), 45202, 16, grad=True)
    assert len(_holding(programs)) == 16
    forms = set()
    for p in programs:
        src = oracle.program_source(p)
        assert src.count("before = module_state(m)") == 1 and "the object it was before the call" in src
        forms |= {m.group(0).split(" = ")[1] for s in p.stmts if (m := _REBIND.match(s.code))}
    assert any(".view(" in f for f in forms) and any("[:]" in f for f in forms), forms
    assert any(f.startswith("m.b.detach()") for f in forms) and len(forms) >= 8, forms


def _keeping_objects(fn, schedule):
    """A stand-in for the jitted module that is eager but puts back each buffer the call rebound to a tensor of the
    same memory, layout and values, the old object (session 43's modules 36315 #25)."""

    def call(*args):
        m = fn if hasattr(fn, "_buffers") else args[0]
        before = {name: mod._buffers.copy() for name, mod in m.named_modules()}
        out = fn(*args)
        for name, mod in m.named_modules():
            for k, t in list(mod._buffers.items()):
                old = before[name].get(k)
                if old is not None and t is not old and t.data_ptr() == old.data_ptr() and t.shape == old.shape \
                        and t.stride() == old.stride():
                    mod._buffers[k] = old
        return out

    return call


@pytest.mark.parametrize("index", [2, 4, 6, 9, 10])  # (of 0-11: those whose module the stand-in reaches, not a global)
def test_the_driver_sees_a_buffer_kept_where_eager_rebinds(index, monkeypatch):
    monkeypatch.setattr(modules_view_rebinds, "P_VIEW_REBIND", 1.0)
    monkeypatch.setattr(modules_view_rebinds, "P_STMT", 1.0)
    p = generate_program(45203, index, generators=("modules",))
    assert dict(p.tags)["entry"] != "global"
    status, detail = oracle.run_program(p, "reads-first", make_jit=_keeping_objects)
    assert status == "mismatch" and "the object it was before the call" in detail, (status, detail)
    status, detail = oracle.run_program(p, "reads-first", make_jit=lambda fn, schedule: fn)
    assert status in ("ok", "both-raised"), detail


@pytest.mark.parametrize("seed, index, grad", [(45204, 0, False), (45204, 2, True), (45204, 5, True), (45204, 6, True)])
def test_programs_of_the_form_match_eager(seed, index, grad, monkeypatch):
    """(45204 #6 with gradients: a mismatch on bc6b4d3, ``m.u = m.u.view(3)`` kept the object:
    tests/test_session45_buffer_view_with_gradients.py)"""
    monkeypatch.setattr(modules_view_rebinds, "P_VIEW_REBIND", 1.0)
    p = generate_program(seed, index, generators=("modules",), grad=grad)
    p = p.replace(grad=grad)
    for schedule in SCHEDULES:
        status, detail = oracle.run_program(p, schedule)
        assert status == "ok", (schedule, detail)
