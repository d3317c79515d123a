"""Session 41 (helper-68): ``--keyword-spellings`` also respells a shape method's varargs as eager's one keyword
(fuzz/keyword_spellings.py, Note [shape keywords, from a stream of their own]): ``x.reshape(shape=(2, 8))``,
``x.view(size=(-1,))``, ``x.permute(dims=(1, 0))``, ``x.expand(size=...)``, ``x.repeat(repeats=...)``. Adding them found
``expand``/``repeat``/``expand_as``/``view_as`` by keyword raising Thunder's TypeError (tests/test_session41_keyword_shapes.py).
The other respellings keep their draws (a stream of their own for the shapes)."""

import ast

from fusion_alias import fuzz
from fusion_alias.fuzz import keyword_spellings, oracle
from helpers import generated_programs

SRC = ("def prog(a, b):\n    t0 = a.reshape(2, 8)\n    t1 = b.view(-1)\n    t2 = a.permute((1, 0))\n"
       "    t3 = b.expand(3, 4, 4)\n    t4 = a.repeat(1, 2)\n    t5 = a.view(torch.int8)\n    t6 = a.reshape(n)\n"
       "    t7 = a.sub_(b, alpha=2.0)\n    t8 = torch.where(t0 > 0, a, b)\n    return t0\n")


def _calls(src):
    found = {}
    for node in ast.walk(ast.parse(src)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            found.setdefault(node.func.attr, []).append(ast.unparse(node))
    return found


def test_shape_methods_respelled_with_eagers_keyword():
    seen: dict = {}
    for label in map(str, range(40)):
        for attr, calls in _calls(keyword_spellings.respelled(SRC, label)).items():
            seen.setdefault(attr, set()).update(calls)
    assert seen["reshape"] == {"a.reshape(2, 8)", "a.reshape(shape=(2, 8))", "a.reshape(n)"}
    assert seen["view"] == {"b.view(-1)", "b.view(size=(-1,))", "a.view(torch.int8)"}
    assert seen["permute"] == {"a.permute((1, 0))", "a.permute(dims=(1, 0))"}
    assert seen["expand"] == {"b.expand(3, 4, 4)", "b.expand(size=(3, 4, 4))"}
    assert seen["repeat"] == {"a.repeat(1, 2)", "a.repeat(repeats=(1, 2))"}


def test_the_other_respellings_keep_their_draws():
    without = SRC.replace("    t0 = a.reshape(2, 8)\n    t1 = b.view(-1)\n    t2 = a.permute((1, 0))\n"
                          "    t3 = b.expand(3, 4, 4)\n    t4 = a.repeat(1, 2)\n", "    t0 = a * 1\n")
    for label in map(str, range(20)):
        a, b = _calls(keyword_spellings.respelled(SRC, label)), _calls(keyword_spellings.respelled(without, label))
        assert a["sub_"] == b["sub_"] and a["where"] == b["where"]


def test_respelled_shape_programs_run_as_eager(monkeypatch):
    programs = generated_programs(None, 38501, 30)
    monkeypatch.setattr(keyword_spellings, "ENABLED", True)
    picked = [i for i, p in enumerate(programs)
              if any(f"{m}=(" in oracle.program_source(p) for m in ("shape", "size", "dims", "repeats"))][:8]
    assert len(picked) >= 4, picked
    report = fuzz.run_fuzz(seed=38501, programs=30, only=picked, do_shrink=False)
    assert report.runs and not report.failures, report.summary()
    assert not report.thunder_unsupported and not report.jit_errors, report.summary()
