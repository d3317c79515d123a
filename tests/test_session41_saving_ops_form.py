"""Session 41 (helper-68): ``--saving-ops`` (fuzz/saving_ops.py, Note [ops that save what a later write changes]):
the basic generator's out-of-place statements draw ops whose eager backward reads what a later write changes (the
class of session 41's saved_versions.py entries). Off (the default), nothing is drawn and every stream is the one
it was; forced, each op is drawn, and the programs run with eager's verdict (gradients, or eager's error refused),
0 mismatches, missed rejections or errors."""

import re

from fusion_alias import fuzz
from fusion_alias.fuzz import oracle, saving_ops
from helpers import generated_programs



def _drawn(src):
    return [op for op in saving_ops._OPS if re.search(re.escape(op).replace(re.escape("{x}"), r"\w+"), src)]


def test_off_nothing_is_drawn():
    assert saving_ops.P_SAVING == 0.0
    for p in generated_programs(("basic",), 41020, 20):
        assert not _drawn(oracle.program_source(p))


def test_forced_every_op_is_drawn(monkeypatch):
    monkeypatch.setattr(saving_ops, "P_SAVING", 1.0)
    seen = set()
    for p in generated_programs(("basic",), 41021, 60):
        seen.update(_drawn(oracle.program_source(p)))
    assert len(seen) >= len(saving_ops._OPS) - 3, set(saving_ops._OPS) - seen


def test_forced_programs_run_with_eagers_verdict(monkeypatch):
    monkeypatch.setattr(saving_ops, "P_SAVING", 1.0)
    programs = generated_programs(("basic",), 41022, 30, True)
    picked = [i for i, p in enumerate(programs) if _drawn(oracle.program_source(p))][:8]
    assert len(picked) >= 5, picked
    report = fuzz.run_fuzz(seed=41022, programs=30, only=picked, do_shrink=False, generators=("basic",), grad=True)
    assert report.runs and not report.failures, report.summary()
    assert not report.jit_errors, report.summary()
