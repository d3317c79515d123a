"""Session 39: the fuzzer's ``--keyword-calls`` (oracle.py, Note [arguments passed by keyword]): the k-th call
of each side passes its last k arguments by name, so the jitted wrapper's keyword handling (guard.py, Note [a
step's numbers and keywords on the fast path]; keyword_fn.py) is compared with eager. Off, every call passes
its arguments by position as before. The program's parameters are renamed to the wrappers' own names (``self``,
``fn``, ...): seed 39004 (30 programs, 3 schedules) gave 10 unexpected errors on 36749b7, 0 now."""

from fusion_alias import fuzz
from fusion_alias.fuzz import oracle
from helpers import generated_programs


def _namespace(p):
    ns: dict = {"__name__": "keyword_calls_test"}
    exec(compile(oracle.program_source(p), "<keyword calls test>", "exec"), ns)
    return ns


def test_the_kth_call_passes_its_last_k_arguments_by_name(monkeypatch):
    programs = [p for p in generated_programs(None, 39001, 20) if p.kind != "modules"]
    before = [oracle.program_source(p) for p in programs]
    assert "_spelled" not in _namespace(programs[0])  # off: by position, the source as before
    monkeypatch.setattr(oracle, "KEYWORD_CALLS", True)
    renamed = [_namespace(p) for p in programs]
    assert all(list(__import__("inspect").signature(ns["prog"]).parameters)[0] == "self" for ns in renamed)
    assert [oracle.program_source(p) for p in programs] != before  # (renamed: Note [arguments passed by keyword])
    for p in programs[:5]:
        ns = _namespace(p)
        names = list(__import__("inspect").signature(ns["prog"]).parameters)
        state: dict = {}
        values = list(range(len(names)))
        for k in range(1, len(names) + 2):
            positional, keywords = ns["_spelled"](values, state)
            cut = max(0, len(names) - k)
            assert positional == values[:cut] and keywords == dict(zip(names[cut:], values[cut:])), (p.name, k)


def test_calls_by_keyword_run_as_eager(monkeypatch):
    monkeypatch.setattr(oracle, "KEYWORD_CALLS", True)
    report = fuzz.run_fuzz(seed=39001, programs=20, only=[0, 2, 4, 6, 8, 10], do_shrink=False)
    assert report.runs and not report.failures, report.summary()
    assert not report.jit_errors, report.summary()
