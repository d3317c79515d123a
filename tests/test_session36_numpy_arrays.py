"""Session 36: a numpy array the program reads, changed in place between calls (default_contents.py, Note [a numpy
array changed in place]); likewise a ``bytearray``, a ``memoryview``, an ``array.array`` and a ``deque`` (Note [a
mutable sequence Thunder does not unpack]; a ``mappingproxy`` and a dict's views likewise), and numbers in a deque given as an argument (guard.py, Note [numbers
inside a deque argument]).

Thunder 0.2.6 reads a numpy array while tracing (``float(LR[0])`` becomes a number in the trace) and its prologue
checks nothing of it; the guard compared the array by identity, so an in-place change ran the old number, silently
(plain ``thunder.jit`` too; session 36 probe). Each test calls with the first contents, the changed ones, then the
first again, against eager on fresh inputs each call, the written input too, under both reference schedules.
"""

import array
import collections
import types

import pytest
import thunder
import torch

import fusion_alias
from helpers import generated_programs

np = pytest.importorskip("numpy")

SCHEDULES = ["reads-first", "writes-first"]

ARR = np.array([2.0, 1.0])
NS = types.SimpleNamespace(a=np.array([2.0]))
BIG = np.ones(10_000)
MATRIX = np.array([[2.0, 1.0], [0.0, 0.0]])
INTS = np.array([2, 1], dtype=np.int64)


def _helper(x, a=np.array([2.0])):
    return x * float(a[0])


ARG = np.array([2.0])
BYTES = bytearray([2])
VIEW = memoryview(bytearray([2]))
DOUBLES = array.array("d", [2.0])
QUEUE = collections.deque([2.0])
STATE = {"k": 2.0}
READ_ONLY = types.MappingProxyType(STATE)
VALUES, ITEMS, KEYS = STATE.values(), STATE.items(), STATE.keys()

# name -> (function of x and the extra arguments, the extra arguments, setter of the number read)
CASES = {
    "global": (lambda x: x.mul_(float(ARR[0])), (), lambda v: ARR.__setitem__(0, v)),
    "global-sum": (lambda x: x.add_(float(ARR.sum())), (), lambda v: ARR.__setitem__(0, v)),
    "attribute": (lambda x: x.mul_(NS.a[0].item()), (), lambda v: NS.a.__setitem__(0, v)),
    "argument": (lambda x, a: x.mul_(float(a[0])), (ARG,), lambda v: ARG.__setitem__(0, v)),
    "in-a-list-argument": (lambda x, lst: x.mul_(float(lst[0][0])), ([ARG],), lambda v: ARG.__setitem__(0, v)),
    "in-a-dict-argument": (lambda x, d: x.mul_(float(d["a"].sum())), ({"a": ARG},), lambda v: ARG.__setitem__(0, v)),
    "large": (lambda x: x.mul_(float(BIG[5])), (), lambda v: BIG.__setitem__(5, v)),
    "transposed": (lambda x: x.mul_(float(MATRIX.T[0, 0])), (), lambda v: MATRIX.__setitem__((0, 0), v)),
    "int64": (lambda x: x.mul_(int(INTS[0])), (), lambda v: INTS.__setitem__(0, int(v))),
    "helper-default": (lambda x: _helper(x).add_(1), (), lambda v: _helper.__defaults__[0].__setitem__(0, v)),
    "bytearray": (lambda x: x.mul_(BYTES[0]), (), lambda v: BYTES.__setitem__(0, int(v))),
    "memoryview": (lambda x: x.mul_(VIEW[0]), (), lambda v: VIEW.__setitem__(0, int(v))),
    "array.array": (lambda x: x.mul_(DOUBLES[0]), (), lambda v: DOUBLES.__setitem__(0, v)),
    "deque": (lambda x: x.mul_(QUEUE[0]), (), lambda v: QUEUE.__setitem__(0, v)),
    "deque-argument": (lambda x, q: x.mul_(q[0]), (QUEUE,), lambda v: QUEUE.__setitem__(0, v)),
    "mappingproxy": (lambda x: x.mul_(READ_ONLY["k"]), (), lambda v: STATE.__setitem__("k", v)),
    "dict-values": (lambda x: x.mul_(list(VALUES)[0]), (), lambda v: STATE.__setitem__("k", v)),
    "dict-items": (lambda x: x.mul_(dict(ITEMS)["k"]), (), lambda v: STATE.__setitem__("k", v)),
    "dict-keys": (lambda x: x.mul_(float(len(KEYS))), (), lambda v: STATE.__setitem__("extra", v) if v != 2.0
                  else STATE.pop("extra", None)),
}


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("case", sorted(CASES))
def test_an_array_changed_in_place(case, schedule):
    fn, extra, set_value = CASES[case]
    jitted = fusion_alias.jit(fn, backend="reference", schedule=schedule)
    try:
        for v in (2.0, 3.0, 2.0):
            set_value(v)
            xe, xj = torch.ones(3), torch.ones(3)
            torch.testing.assert_close(jitted(xj, *extra), fn(xe, *extra))
            torch.testing.assert_close(xj, xe)
    finally:
        set_value(2.0)
    assert thunder.cache_misses(jitted) == 2  # (the third call runs the first call's program again)


def test_an_array_the_program_changes_itself():
    """``ARR[0] += 1`` inside: each call finds other contents and compiles anew; the results are eager's."""
    arr = np.array([2.0])

    def fn(x):
        r = x * float(arr[0])
        arr[0] += 1
        return r

    jitted = fusion_alias.jit(fn, backend="reference")
    got = [jitted(torch.ones(1)).item() for _ in range(3)]
    arr[0] = 2.0
    assert got == [fn(torch.ones(1)).item() for _ in range(3)]


def test_an_unchanged_array_reuses_the_program():
    arr = np.array([2.0, np.nan])

    def fn(x):
        return x.mul_(float(arr[0]))

    jitted = fusion_alias.jit(fn, backend="reference")
    for _ in range(3):
        jitted(torch.ones(3))
    assert (thunder.cache_hits(jitted), thunder.cache_misses(jitted)) == (2, 1)


# The generator form (fuzz/hidden_numbers.py, ``number_array`` and its kin, ``CONTAINERS``): with P_NUMBER and
# P_ARRAY 1, seed 36003 (40 programs, reference backend, 3 schedules, numpy arrays only at the time): 3 mismatches (#1,
# #5, #11) on the code before the fix, 0 after; with the four containers, seed 36005: see docs/testing.md.


def test_the_hidden_generator_reads_a_number_from_a_container(monkeypatch):
    from fusion_alias.fuzz import hidden_numbers, oracle

    monkeypatch.setattr(hidden_numbers, "P_NUMBER", 1.0)
    monkeypatch.setattr(hidden_numbers, "P_ARRAY", 1.0)
    programs = generated_programs(("hidden",), 36003, 40)
    seen = set()
    for p in programs:
        (kind,) = [k for h, k, _ in p.hidden if h == hidden_numbers.NAME]
        assert kind != "number_list"
        if kind in hidden_numbers.CONTAINERS:
            seen.add(kind)
            src = oracle.program_source(p)
            assert "    n0 = float(ARR_n0[0])" in src and "ARR_n0 = " in src
            assert hidden_numbers.install("n0", kind) in src
            assert not any(s.must_refuse == hidden_numbers.CHANGED for s in p.stmts)
    assert seen == set(hidden_numbers.CONTAINERS)
