"""Session 35: a function, a builtin, a method, a class, a dtype, a device or an enum member given as an argument and
changed between calls (guard.py, Note [a function or a dtype given as an argument]).

Thunder 0.2.6's prologue checks numbers and strings of the call, not these: the program traced with the first one
ran for every later one, silently (plain ``thunder.jit`` too; session 35 probe). Each test calls with the first
value, the second, the first again, and compares with eager on fresh inputs each call, the written input included,
under both reference schedules.
"""

import enum
import functools

import pytest
import torch

import fusion_alias

SCHEDULES = ["reads-first", "writes-first"]


class Mode(enum.Enum):
    A = 1
    B = 2


class Scaler:
    def __init__(self, k):
        self.k = k

    def apply(self, x):
        return x * self.k


def _relu_like(x):
    return torch.relu(x)


def _tanh_like(x):
    return torch.tanh(x)


def _x():
    return torch.tensor([[-1.0, 0.5, 2.0], [0.25, -3.0, 1.5]])


def _check(fn, values, schedule, *, wrap=lambda v: (v,), kw=False):
    """``fn(x, *wrap(v))`` for each of ``values`` in turn (``kw``: as keyword ``a``), against eager."""
    jitted = fusion_alias.jit(fn, backend="reference", schedule=schedule)
    for v in values:
        xe, xj = _x(), _x()
        if kw:
            want, got = fn(xe, a=v), jitted(xj, a=v)
        else:
            want, got = fn(xe, *wrap(v)), jitted(xj, *wrap(v))
        assert got.dtype == want.dtype
        torch.testing.assert_close(got, want)
        torch.testing.assert_close(xj, xe)
    return jitted


def _writes_through(x, a):
    x.mul_(2)
    return a(x) + 1


def _by_dtype(x, a):
    x.add_(1)
    return x.to(a) * 2


def _by_enum(x, a):
    return x.mul_(2) if a is Mode.A else x.mul_(3)


def _by_class(x, a):
    return a(3.0).apply(x.add_(1))


def _reduce_with(x, a):
    x.sub_(0.5)
    return a(x, 0)[0]


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize(
    "fn, values",
    [
        (_writes_through, (torch.relu, torch.tanh, torch.relu)),
        (_writes_through, (_relu_like, _tanh_like, _relu_like)),
        (_writes_through, (torch.exp, torch.sigmoid, torch.exp)),
        (_by_dtype, (torch.float64, torch.float16, torch.float64)),
        (_by_dtype, (torch.float32, torch.int32, torch.float32)),
        (_by_enum, (Mode.A, Mode.B, Mode.A)),
        (_reduce_with, (torch.max, torch.min, torch.max)),
    ],
    ids=["torch-function", "user-function", "torch-function-2", "dtype", "dtype-int", "enum", "builtin"],
)
def test_changed_between_calls(fn, values, schedule):
    jitted = _check(fn, values, schedule)
    assert jitted.compiled_structures == 2  # (the third call runs the first program again)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_a_function_in_a_list_argument(schedule):
    def fn(x, fns):
        x.mul_(2)
        return fns[0](x) + fns[1](x)

    _check(fn, ([torch.relu, torch.exp], [torch.tanh, torch.exp], [torch.relu, torch.exp]), schedule)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_a_function_in_a_dict_argument(schedule):
    def fn(x, cfg):
        x.mul_(cfg["scale"])
        return cfg["act"](x)

    _check(fn, ({"act": torch.relu, "scale": 2.0}, {"act": torch.tanh, "scale": 2.0},
                {"act": torch.relu, "scale": 2.0}), schedule)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_a_function_given_as_a_keyword(schedule):
    def fn(x, a=None):
        x.add_(1)
        return a(x)

    _check(fn, (torch.relu, torch.tanh, torch.relu), schedule, kw=True)


class _Unhashable(Scaler):
    __hash__ = None


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("owner", [Scaler, _Unhashable], ids=["hashable", "unhashable"])
def test_a_bound_method(owner, schedule):
    """(An unhashable object's method is keyed by identity too.)"""
    two, three = owner(2.0), owner(3.0)

    def fn(x, a):
        x.add_(1)
        return a(x)

    _check(fn, (two.apply, three.apply, two.apply), schedule)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_a_class(schedule):
    class Other(Scaler):
        def apply(self, x):
            return x - self.k

    _check(_by_class, (Scaler, Other, Scaler), schedule)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_a_partial(schedule):
    def fn(x, a):
        x.add_(1)
        return a(x)

    double = functools.partial(torch.mul, 2.0)
    triple = functools.partial(torch.mul, 3.0)
    _check(fn, (double, triple, double), schedule)


def test_the_same_function_again_compiles_once():
    jitted = _check(_writes_through, (torch.relu, torch.relu, torch.relu), "reads-first")
    assert jitted.compiled_structures == 1


def _by_value(x, a):
    if a == b"a" or a == range(0, 2) or a is Ellipsis or a == torch.strided:
        return x.mul_(2)
    return x.mul_(3)


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize(
    "values",
    [(b"a", b"b", b"a"), (range(0, 2), range(1, 3), range(0, 2)), (Ellipsis, None, Ellipsis),
     (torch.strided, torch.sparse_coo, torch.strided)],
    ids=["bytes", "range", "ellipsis", "layout"],
)
def test_other_values_thunder_does_not_check(values, schedule):
    _check(_by_value, values, schedule)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_a_numpy_integer(schedule):
    np = pytest.importorskip("numpy")

    def fn(x, a):
        return x.mul_(int(a))

    jitted = _check(fn, (np.int64(2), np.int64(3), np.int64(2)), schedule)
    assert jitted.compiled_structures == 2


def test_a_new_plain_object_each_call_compiles_once():
    """A plain object's attributes are checked by Thunder's prologue and outside_reads.py: not keyed by identity."""

    class Cfg:
        def __init__(self, k):
            self.k = k

    def fn(x, cfg):
        return x.mul_(cfg.k)

    jitted = _check(fn, (Cfg(2.0), Cfg(2.0), Cfg(3.0), Cfg(2.0)), "reads-first")
    assert jitted.compiled_structures == 1


def test_a_module_argument():
    """(Its tables are guarded by module_tables.py, which compiles once per module called.)"""

    def fn(x, m):
        return m(x.mul_(2))

    torch.manual_seed(0)
    first, second = torch.nn.Linear(3, 3), torch.nn.Linear(3, 3)
    jitted = _check(fn, (first, second, first), "reads-first")
    assert jitted.compiled_structures == 2


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_a_set_argument_changed_in_place(schedule):
    def fn(x, s):
        return x.mul_(2) if 1 in s else x.mul_(3)

    jitted = fusion_alias.jit(fn, backend="reference", schedule=schedule)
    s = {1}
    for change in (None, lambda: s.discard(1), lambda: s.add(1)):
        if change is not None:
            change()
        xe, xj = _x(), _x()
        torch.testing.assert_close(jitted(xj, s), fn(xe, s))
        torch.testing.assert_close(xj, xe)
