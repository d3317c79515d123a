"""Session 45 (helper-73): a ``calls`` program called, after calls on independent tensors, with disjoint views of one
base (fuzz/disjoint_views.py, Note [disjoint views of one base, after independent tensors], ``P_DISJOINT``): session
44's class (guard.py, Note [inputs that share a storage, in a call with gradients]; tests/test_session44_shared_storage_key.py)
in the fuzzer, with a driver that counts an eager error at backward as a rejection the jitted call must make too (the
oracle left such a call uncompared, ``both-raised``: a gradient where eager raises was never seen). Drawn from a
stream of its own: with ``P_DISJOINT`` 0 every program is the one it was."""

import re

import pytest
import torch

from fusion_alias.fuzz import disjoint_views, oracle, source
from fusion_alias.fuzz.generator import generate_program
from fusion_alias.fuzz.program import Program, Stmt, Variant
from helpers import generated_programs

SCHEDULES = ("reads-first", "writes-first", "reverse-writes")


@pytest.fixture(autouse=True)
def _no_special_values(monkeypatch):
    monkeypatch.setattr(source, "SPECIAL_VALUES", False)


def test_the_form_off_leaves_every_program(monkeypatch):
    monkeypatch.setattr(disjoint_views, "P_DISJOINT", 0.0)
    drawn = generated_programs(("calls",), 45301, 10, grad=True)
    monkeypatch.setattr(disjoint_views, "finish_inputs", lambda rng, fields: fields)
    assert drawn == generated_programs(("calls",), 45301, 10, grad=True)
    assert not any(disjoint_views.strict(p) for p in drawn)
    assert "eager raised at backward" not in oracle.program_source(drawn[0])


def test_the_form_adds_a_call_on_disjoint_pieces_of_one_base(monkeypatch):
    monkeypatch.setattr(disjoint_views, "P_DISJOINT", 1.0)
    for p in generated_programs(("calls",), 45302, 12, grad=True):
        base, (n,) = p.bases[-1]
        assert base == disjoint_views.BASE and disjoint_views.strict(p)
        new = len(p.all_variants) - 1
        first = p.calls[0]
        assert p.calls[:3] == (first, first, new) and set(p.calls) == set(range(new + 1))
        assert all(e == f"x{k}" for k, (_, e) in enumerate(p.all_variants[first].args))  # (independent first)
        spans = []
        for (_, e), (_, shape) in zip(p.all_variants[new].args, p.bases):
            m = re.fullmatch(rf"{base}\[(\d+)(?::(\d+))?\](?:\.view\(.*\))?", e)
            lo, hi = int(m.group(1)), int(m.group(2) or int(m.group(1)) + 1)
            spans.append((lo, hi))
        assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:])) and spans[-1][1] <= n  # (disjoint, in the base)
        assert "eager raised at backward" in oracle.program_source(p)


def _shared_counter_program() -> Program:
    """helper-72's repro (docs/testing.md, session 44): ``a.sigmoid_()`` saves ``a``, ``b.mul_(2)`` moves the one
    version counter of ``a``'s base where ``a`` and ``b`` are pieces of one base; eager raises at backward."""
    return Program(name="shared counter", input_seed=3, bases=(("x0", (2,)), ("x1", (2,)), ("xd", (4,))),
                   args=(("a", "x0"), ("b", "x1")),
                   stmts=(Stmt("a.sigmoid_()", reads=("a",), writes="a"), Stmt("b.mul_(2)", reads=("b",), writes="b"),
                          Stmt("t0 = a.sum()", target="t0", reads=("a",))),
                   returns=("t0",), grad=True, kind="calls",
                   variants=(Variant(args=(("a", "xd[0:2]"), ("b", "xd[2:4]"))),), call_order=(0, 0, 1, 0),
                   tags=(disjoint_views.TAG,))


def _on_copies(fn, schedule):
    """A stand-in that runs eager on copies of the arguments (so no version counter is shared) and copies their
    values back under no_grad: eager's values and gradients, and no error at backward."""

    def call(*args):
        copies = [a.clone() for a in args]
        out = fn(*copies)
        with torch.no_grad():
            for a, c in zip(args, copies):
                a.copy_(c)
        return out

    return call


def test_the_strict_driver_counts_a_gradient_where_eager_raises_as_a_missed_rejection():
    p = _shared_counter_program()
    status, detail = oracle.run_program(p, "reads-first", make_jit=_on_copies)
    assert status == "missed-rejection" and "call 3" in detail and "modified by an inplace" in detail, detail
    loose = p.replace(tags=())
    assert oracle.run_program(loose, "reads-first", make_jit=_on_copies)[0] == "both-raised"  # (the old rule)
    for schedule in SCHEDULES:  # fusion_alias raises on call 3 as eager does (session 44's guard and version
        assert oracle.run_program(p, schedule)[0] == "ok"  # counters), and the other calls match


@pytest.mark.parametrize("index", [1, 3, 5])
def test_programs_of_the_form_match_eager(index, monkeypatch):
    monkeypatch.setattr(disjoint_views, "P_DISJOINT", 1.0)
    p = generate_program(45303, index, generators=("calls",), grad=True).replace(grad=True)
    for schedule in SCHEDULES:
        status, detail = oracle.run_program(p, schedule)
        assert status in ("ok", "both-raised"), (schedule, detail)
