"""Session 38: the fuzzer's ``--keyword-spellings`` (fuzz/keyword_spellings.py, Note [keyword spellings respell the
rendered program]) respells about half of each program's calls with eager's keyword names for their operands
(eager_keywords.py, unbiased_spellings.py). Off, every program renders as before. On 951e4dc, seed 38501's 20
respelled programs gave 15 programs that raised Thunder's TypeError (counted as unsupported by Thunder); now 0."""

import ast

from fusion_alias import fuzz
from fusion_alias.fuzz import keyword_spellings, oracle
from helpers import generated_programs


def test_respelling_names_the_operands_as_eager_does():
    src = ("def prog(a, b):\n    t0 = a.sub_(b, alpha=2.0)\n    t1 = torch.where(t0 > 0, a, b)\n"
           "    t2 = torch.pow(a, 2)\n    t3 = b.addcmul(a, a, value=0.5)\n    t4 = a.var(0)\n"
           "    return a.clamp(0.1) + t1 + t2 + t3 + t4\n")
    calls = {}
    for label in map(str, range(40)):  # (each call respelled in about half of the streams)
        for node in ast.walk(ast.parse(keyword_spellings.respelled(src, label))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                calls.setdefault(node.func.attr, set()).add(
                    (len(node.args), tuple(k.arg for k in node.keywords)))
    assert calls["sub_"] == {(1, ("alpha",)), (0, ("other", "alpha"))}
    assert calls["where"] == {(3, ()), (0, ("condition", "input", "other"))}
    assert calls["pow"] == {(2, ()), (0, ("input", "exponent"))}
    assert calls["addcmul"] == {(2, ("value",)), (0, ("tensor1", "tensor2", "value"))}
    assert calls["var"] == {(1, ()), (1, ("unbiased",))}
    assert calls["clamp"] == {(1, ())}  # (its names are Thunder's too: not respelled)


def test_off_nothing_changes_and_on_the_programs_are_respelled(monkeypatch):
    programs = generated_programs(None, 38501, 20)
    before = [oracle.program_source(p) for p in programs]
    monkeypatch.setattr(keyword_spellings, "ENABLED", True)
    after = [oracle.program_source(p) for p in programs]
    changed = sum(a != b for a, b in zip(before, after))
    assert changed >= 10, changed
    monkeypatch.setattr(keyword_spellings, "ENABLED", False)
    assert [oracle.program_source(p) for p in programs] == before


def test_respelled_programs_run_as_eager(monkeypatch):
    monkeypatch.setattr(keyword_spellings, "ENABLED", True)
    report = fuzz.run_fuzz(seed=38501, programs=20, only=[0, 1, 3, 5, 7, 9, 12, 16], do_shrink=False)
    assert report.runs and not report.failures, report.summary()
    assert not report.thunder_unsupported and not report.jit_errors, report.summary()
