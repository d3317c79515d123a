"""Session 41 (helper-68): the layout generator's kernel form draws the stacks, ``kron`` and ``tile``
(fuzz/fresh_memory_ops.py, Note [new-memory ops in the kernel form]): each result is reshaped, written or read, as the
form's other results are; with the gate 0 none is drawn (tests/test_session35_generators.py pins the stream so). The programs drawn run
as eager does (0 mismatches, missed rejections or errors on the final code, reference schedules, with and without
gradients)."""

import re

from fusion_alias import fuzz
from fusion_alias.fuzz import fresh_memory_ops, kernel_layouts, oracle
from helpers import generated_programs

_NEW = re.compile(r"torch\.(hstack|vstack|row_stack|dstack|column_stack|kron)\(|\.tile\(")


def test_forced_every_op_is_drawn(monkeypatch):
    monkeypatch.setattr(kernel_layouts, "P_KERNEL", 1.0)
    monkeypatch.setattr(fresh_memory_ops, "P_FRESH", 1.0)
    seen = set()
    for p in generated_programs(("layout",), 41001, 40):
        for s in p.stmts:
            m = _NEW.search(s.code)
            if m:
                seen.add(m.group(1) or "tile")
    assert seen == {"hstack", "vstack", "row_stack", "dstack", "column_stack", "kron", "tile"}, seen


def test_off_nothing_is_drawn(monkeypatch):
    monkeypatch.setattr(kernel_layouts, "P_KERNEL", 1.0)
    monkeypatch.setattr(fresh_memory_ops, "P_FRESH", 0.0)
    assert not any(_NEW.search(oracle.program_source(p)) for p in generated_programs(("layout",), 41002, 12))


def _picked(seed, grad):
    programs = generated_programs(("layout",), seed, 24, grad)
    return [i for i, p in enumerate(programs) if _NEW.search(oracle.program_source(p))][:6]


def test_forced_programs_run_as_eager(monkeypatch):
    monkeypatch.setattr(kernel_layouts, "P_KERNEL", 1.0)
    monkeypatch.setattr(fresh_memory_ops, "P_FRESH", 1.0)
    for grad in (False, True):
        picked = _picked(41003, grad)
        assert len(picked) >= 3, picked
        report = fuzz.run_fuzz(seed=41003, programs=24, only=picked, do_shrink=False, generators=("layout",),
                               grad=grad)
        assert report.runs and not report.failures, report.summary()
        assert not report.jit_errors, report.summary()
