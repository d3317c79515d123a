"""Session 35: a value of a type Thunder's prologue does not check, read from a global, a closure or an attribute of
an argument object and changed between calls (object_shapes.py, Note [a value Thunder's prologue does not check]).

Thunder 0.2.6 checks the numbers and strings a program reads from outside its arguments, not a ``numpy.int64``, a
``range``, ``bytes``, a ``frozenset`` or a ``set``, a ``torch.layout`` or ``...``: the program traced with the first
value ran for every later one, silently (plain ``thunder.jit`` too; session 35 probe). Each test calls with the
first value, the second, the first again, comparing with eager on fresh inputs each call, the written input too,
under both reference schedules.
"""

import types

import pytest
import torch

import fusion_alias

np = pytest.importorskip("numpy")

SCHEDULES = ["reads-first", "writes-first"]
G = types.SimpleNamespace(v=None)

VALUES = {
    "numpy-int64": (np.int64(2), np.int64(3)),
    "range": (range(2), range(3)),
    "bytes": (b"a", b"b"),
    "frozenset": (frozenset({1}), frozenset({2})),
    "layout": (torch.strided, torch.sparse_coo),
    "ellipsis": (Ellipsis, 5),
}


def _global_reader(first):
    def fn(x):
        return x.mul_(2) if G.v == first else x.mul_(3)

    return fn


def _run(fn, jitted, set_value, values, *extra):
    for v in (values[0], values[1], values[0]):
        set_value(v)
        xe, xj = torch.ones(3), torch.ones(3)
        torch.testing.assert_close(jitted(xj, *extra), fn(xe, *extra))
        torch.testing.assert_close(xj, xe)


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("kind", sorted(VALUES))
def test_read_from_a_global(kind, schedule):
    values = VALUES[kind]
    fn = _global_reader(values[0])
    _run(fn, fusion_alias.jit(fn, backend="reference", schedule=schedule), lambda v: setattr(G, "v", v), values)


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("kind", sorted(VALUES))
def test_read_from_an_argument_object(kind, schedule):
    values = VALUES[kind]
    box = types.SimpleNamespace(v=None)

    def fn(x, o):
        return x.mul_(2) if o.v == values[0] else x.mul_(3)

    _run(fn, fusion_alias.jit(fn, backend="reference", schedule=schedule), lambda v: setattr(box, "v", v), values,
         box)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_read_from_a_closure(schedule):
    n = np.int64(2)

    def fn(x):
        return x.mul_(int(n))

    jitted = fusion_alias.jit(fn, backend="reference", schedule=schedule)
    for v in (2, 3, 2):
        n = np.int64(v)  # noqa: F841 (the closure's cell)
        xe, xj = torch.ones(3), torch.ones(3)
        torch.testing.assert_close(jitted(xj), fn(xe))
        torch.testing.assert_close(xj, xe)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_a_global_set_changed_in_place(schedule):
    seen = {1}

    def fn(x):
        return x.mul_(2) if 1 in G.s else x.mul_(3)

    G.s = seen
    jitted = fusion_alias.jit(fn, backend="reference", schedule=schedule)
    for change in (None, lambda: seen.discard(1), lambda: seen.add(1)):
        if change is not None:
            change()
        xe, xj = torch.ones(3), torch.ones(3)
        torch.testing.assert_close(jitted(xj), fn(xe))
        torch.testing.assert_close(xj, xe)


def test_the_same_value_again_compiles_once():
    values = VALUES["numpy-int64"]
    fn = _global_reader(values[0])
    jitted = fusion_alias.jit(fn, backend="reference")
    for v in (np.int64(2), np.int64(2), np.int64(2)):
        G.v = v
        xe, xj = torch.ones(3), torch.ones(3)
        torch.testing.assert_close(jitted(xj), fn(xe))
    assert jitted.compiled_structures == 1
