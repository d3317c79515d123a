"""Session 32 probes: what a program reads of Python objects outside its arguments changes between calls.

Thunder 0.2.6 answers ``if self.extra is None``, ``"m" in STATE``, ``len(self.past)``, ``if LST:``,
``STATE.get("m")``, ``hasattr(H, "w")`` and ``getattr(H, "w", None)`` while tracing and its prologue
checks none of them, so a cached program kept the first call's answer, silently (plain ``thunder.jit``
too). fusion_alias.jit now guards each (outside_reads.py). And a lazily initialised optimizer state held
on ``self`` of a jitted bound method (``fusion_alias.jit(opt.step)``) was left holding TensorProxies
without a word; it is refused now, as it was for a module's attributes (leaked_proxies.py)."""

import pytest
import torch

import fusion_alias

SCHEDULES = ("reads-first", "writes-first")


class _Holder:
    pass


def _calls_match_eager(fn, states, schedule, make_x=lambda: torch.arange(3.0)):
    """Call ``fn`` jitted, and eager, once per state (each a function that sets the state first); the
    jitted call's result and its written argument must be eager's at every call."""
    jitted = fusion_alias.jit(fn, backend="reference", schedule=schedule)
    for set_state in states:
        set_state()
        x_e, x_j = make_x(), make_x()
        expected, got = fn(x_e), jitted(x_j)
        torch.testing.assert_close(got, expected, rtol=0, atol=0)
        torch.testing.assert_close(x_j, x_e, rtol=0, atol=0)
    return jitted


G = None


def _set_g(value):
    def set_state():
        global G
        G = value
    return set_state


def _reads_g(x):
    x.mul_(2)
    return x + G if G is not None else x * 1


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_a_global_none_then_a_tensor(schedule):
    t = torch.full((3,), 5.0)
    states = [_set_g(None), _set_g(t), _set_g(None), _set_g(t), _set_g(3.0), _set_g(None)]
    jitted = _calls_match_eager(_reads_g, states, schedule)
    assert jitted.compiled_structures <= 4  # (None, a tensor, a number: no program per call)


class _Optional(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.extra = None

    def forward(self, x):
        if self.extra is None:
            return x * 1
        return x + self.extra


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_a_module_attribute_none_then_a_tensor(schedule):
    m = _Optional()
    jitted = fusion_alias.jit(m, backend="reference", schedule=schedule)
    x = torch.ones(3)
    torch.testing.assert_close(jitted(x), x)
    m.extra = torch.full((3,), 7.0)
    torch.testing.assert_close(jitted(x), x + 7)
    m.extra = None
    torch.testing.assert_close(jitted(x), x)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_a_closure_none_then_a_tensor(schedule):
    extra = None

    def fn(x):
        return x * 1 if extra is None else x.add_(extra)

    def set_extra(value):
        def set_state():
            nonlocal extra
            extra = value
        return set_state

    _calls_match_eager(fn, [set_extra(None), set_extra(torch.ones(3)), set_extra(None)], schedule)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_an_attribute_of_an_argument_object(schedule):
    opt = _Holder()
    opt.m = None

    def fn(x, o):
        return x * 1 if o.m is None else x.sub_(o.m)

    jitted = fusion_alias.jit(fn, backend="reference", schedule=schedule)
    for m in (None, torch.full((3,), 2.0), None, torch.full((3,), 4.0)):
        opt.m = m
        x_e, x_j = torch.arange(3.0), torch.arange(3.0)
        torch.testing.assert_close(jitted(x_j, opt), fn(x_e, opt))
        torch.testing.assert_close(x_j, x_e)


STATE: dict = {}
LST: list = []
H = _Holder()

# program, then how to give it the value and how to take it away
CONTAINER_READS = {
    "in": (lambda x: x * 1 if "m" not in STATE else x.add_(STATE["m"]), "dict"),
    "dict.get": (lambda x: x * 1 if STATE.get("m") is None else x.add_(STATE["m"]), "dict"),
    "len": (lambda x: x * 1 if len(LST) == 0 else x.add_(LST[0]), "list"),
    "truth": (lambda x: x.add_(LST[0]) if LST else x * 1, "list"),
    "hasattr": (lambda x: x.add_(H.w) if hasattr(H, "w") else x * 1, "object"),
    "getattr_default": (lambda x: x * 1 if getattr(H, "w", None) is None else x.add_(H.w), "object"),
}


def _give(kind):
    def give():
        t = torch.full((3,), 2.0)
        if kind == "dict":
            STATE["m"] = t
        elif kind == "list":
            LST.append(t)
        else:
            H.w = t
    return give


def _take(kind):
    def take():
        STATE.clear()
        LST.clear()
        H.__dict__.pop("w", None)
    return take


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("name", list(CONTAINER_READS))
def test_the_shape_of_a_container_read_from_outside(name, schedule):
    fn, kind = CONTAINER_READS[name]
    give, take = _give(kind), _take(kind)
    try:
        _calls_match_eager(fn, [take, give, take, give, give], schedule)
    finally:
        take()


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_repeated_calls_compile_once(schedule):
    """No program per call where nothing changes: a module with a None bias, a global dict read."""
    lin = torch.nn.Linear(3, 3, bias=False)
    jitted = fusion_alias.jit(lin, backend="reference", schedule=schedule)
    x = torch.ones(2, 3)
    jitted(x)
    seen = jitted.compiled_structures
    for _ in range(3):
        torch.testing.assert_close(jitted(x), lin(x))
    assert jitted.compiled_structures == seen
    STATE.clear()
    STATE["m"] = torch.ones(3)
    try:
        fn = CONTAINER_READS["in"][0]
        jitted = fusion_alias.jit(fn, backend="reference", schedule=schedule)
        for _ in range(3):
            jitted(torch.zeros(3))
        assert jitted.compiled_structures == 1
    finally:
        STATE.clear()


class _LazySGD:
    def __init__(self, params, state=None):
        self.params = params
        self.state = {} if state is None else state

    def step(self, grads):
        for i, (p, g) in enumerate(zip(self.params, grads)):
            if i not in self.state:
                self.state[i] = torch.zeros_like(p)
            buf = self.state[i]
            buf.mul_(0.9).add_(g)
            p.sub_(buf, alpha=0.1)


def test_lazy_state_on_a_bound_methods_self_is_refused():
    opt = _LazySGD([torch.ones(3), torch.ones(2)])
    step = fusion_alias.jit(opt.step, backend="reference")
    with pytest.raises(NotImplementedError, match=r"self\.state\[0\]"):
        step([torch.ones(3), torch.ones(2)])


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_state_made_before_the_call_runs(schedule):
    params_e, params_j = [torch.ones(3), torch.ones(2)], [torch.ones(3), torch.ones(2)]
    opt_e = _LazySGD(params_e, {i: torch.zeros_like(p) for i, p in enumerate(params_e)})
    opt_j = _LazySGD(params_j, {i: torch.zeros_like(p) for i, p in enumerate(params_j)})
    step = fusion_alias.jit(opt_j.step, backend="reference", schedule=schedule)
    for _ in range(3):
        grads = [torch.full((3,), 1.0), torch.full((2,), 2.0)]
        opt_e.step(grads)
        step(grads)
    for a, b in zip(params_j + list(opt_j.state.values()), params_e + list(opt_e.state.values())):
        torch.testing.assert_close(a, b)



import enum  # noqa: E402


class Mode(enum.Enum):
    A = 1
    B = 2


MODE = Mode.A
ACT = torch.relu
DT = torch.float32

# Objects Thunder 0.2.6's prologue does not check either: an enum member, a function, a dtype, read from a
# global (outside_reads.py: compared as themselves)
IDENTITY_READS = {
    "enum_is": (lambda x: x.mul_(2) if MODE is Mode.A else x.mul_(3), "MODE", Mode.A, Mode.B),
    "enum_eq": (lambda x: x.mul_(2) if MODE == Mode.A else x.mul_(3), "MODE", Mode.A, Mode.B),
    "function": (lambda x: ACT(x.sub_(0.5)), "ACT", torch.relu, torch.tanh),
    "dtype": (lambda x: x.add_(1).to(DT) * 2, "DT", torch.float32, torch.float64),
}


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("name", list(IDENTITY_READS))
def test_an_object_read_from_a_global_changes(name, schedule):
    fn, global_name, first, second = IDENTITY_READS[name]

    def setting(value):
        return lambda: globals().__setitem__(global_name, value)

    try:
        jitted = _calls_match_eager(fn, [setting(first), setting(second), setting(first), setting(second)], schedule,
                                    make_x=lambda: torch.linspace(-1, 1, 4))
        assert jitted.compiled_structures <= 3  # (the first program, then one per answer: no program per call)
    finally:
        globals()[global_name] = first


class _Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.ln = torch.nn.LayerNorm(4)
        self.fc = torch.nn.Linear(4, 4, bias=False)
        self.act = torch.nn.functional.gelu
        self.extra = None

    def forward(self, x):
        h = self.act(self.fc(self.ln(x)))
        return x + (h if self.extra is None else h + self.extra)


def test_torchs_own_module_state_is_not_recorded():
    """A module's hooks and ``_compiled_call_impl`` are torch's bookkeeping, read by every module call: the
    guard follows only the program's own reads (here 4 a block: ``extra``, ``act``, the Linear's None bias, the
    LayerNorm's ``normalized_shape``), not about 15 more a module."""
    m = torch.nn.Sequential(_Block(), _Block())
    jitted = fusion_alias.jit(m, backend="reference")
    x = torch.randn(2, 4)
    with torch.no_grad():
        torch.testing.assert_close(jitted(x), m(x))
        m[1].extra = torch.ones(4)
        torch.testing.assert_close(jitted(x), m(x))
    for jfn in jitted._jitted:
        for entry in jfn._lc_cs.interpreter_cache:
            identity = getattr(entry.prologue_fn, "identity", None) or ()
            # (session 33: the hook dicts, submodules and attribute counts of every module called are one record
            # holding them, module_tables.py, not a path each)
            tables = [r for r, _ in identity if not r.inputs]
            assert len(tables) <= 1 and all(type(r.value).__name__ == "ModuleTables" for r in tables), tables
            identity = [(r, t) for r, t in identity if r.inputs]
            names = [r.inputs[1].value for r, _ in identity]
            # (session 34: a called module's ``forward`` is guarded by its module tables with its class, not by a
            # ``forward.__func__`` path each: module_tables.py, Note [forward replaced on the class])
            assert not [n for n in names if n.startswith("_") and n != "_parameters"], names
            assert len(identity) <= 8, names


import random  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

from fusion_alias.untraceable_calls import UntraceableCallError  # noqa: E402

_RNG = random.Random(0)

# Python values the tracer would fix at the first call (untraceable_calls.py, Note [a value the tracer would
# fix at the first call]): eager draws anew at each call
TRACE_TIME_VALUES = {
    "random.random": lambda x: x.mul_(2) if random.random() < 0.5 else x.mul_(3),
    "random.uniform": lambda x: x.mul_(random.uniform(0, 1)),
    "random.choice": lambda x: x.mul_(random.choice([1, 2])),
    "a Random's method": lambda x: x.add_(_RNG.random()),
    "numpy.random.rand": lambda x: x.add_(float(np.random.rand())),
    "time.time": lambda x: x.add_(time.time() % 1),
}


@pytest.mark.parametrize("name", list(TRACE_TIME_VALUES))
def test_a_python_value_the_trace_would_fix_is_refused(name):
    jitted = fusion_alias.jit(TRACE_TIME_VALUES[name], backend="reference")
    with pytest.raises(UntraceableCallError, match="every later call would reuse that first value"):
        jitted(torch.ones(3))


def test_torchs_random_ops_still_run():
    jitted = fusion_alias.jit(lambda x: x.add_(torch.rand(())).mul_(2), backend="reference")
    torch.manual_seed(0)
    got = jitted(torch.ones(3))
    torch.manual_seed(0)
    torch.testing.assert_close(got, torch.ones(3).add_(torch.rand(())).mul_(2))


PARAMS: list = []


def _step_over_global_params(x):
    for p in PARAMS:
        p.add_(x)
    return x * 1


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_a_global_list_of_parameters_that_grows(schedule):
    """An optimizer-like step over a global list: a parameter appended after the first call was skipped,
    silently (its length was decided while tracing; plain thunder.jit too)."""
    PARAMS[:] = [torch.ones(2), torch.ones(2)]
    try:
        step = fusion_alias.jit(_step_over_global_params, backend="reference", schedule=schedule)
        step(torch.ones(2))
        PARAMS.append(torch.zeros(2))
        step(torch.ones(2))
        assert [p.tolist() for p in PARAMS] == [[3.0, 3.0], [3.0, 3.0], [1.0, 1.0]]
    finally:
        PARAMS.clear()


def _sgd_over_arguments(params, grads):
    for i in range(len(params)):
        for p, g in zip(params[i:i + 1], grads[i:i + 1]):
            p.add_(g, alpha=-0.01)


def test_a_function_that_reads_only_its_arguments_pays_no_guard():
    """Builtins (``zip``, ``len``, ``range``) are read through the function's ``__globals__["__builtins__"]``:
    Python's table, not the program's state. Recording its keys put a guard on every call (2.15x plain
    thunder.jit's cached call at 2 inputs, bench.percall, until it was left out)."""
    from fusion_alias.api import _GuardedPrologue

    params, grads = [torch.ones(4), torch.ones(4)], [torch.ones(4), torch.ones(4)]
    jitted = fusion_alias.jit(_sgd_over_arguments, backend="reference")
    jitted(params, grads)
    (jfn,) = jitted._jitted
    assert not any(isinstance(e.prologue_fn, _GuardedPrologue) for e in jfn._lc_cs.interpreter_cache)


def test_a_function_defined_in_main_pays_no_guard():
    """In ``__main__`` (``python -m fusion_alias.bench.percall``) ``__builtins__`` is the builtins module, and
    ``zip`` is read through its ``__dict__``: still Python's table (bench.percall was 2.1x at 2 inputs)."""
    import builtins

    from fusion_alias.api import _GuardedPrologue

    namespace = {"__builtins__": builtins, "__name__": "__main__"}
    exec("def step(params, grads):\n    for p, g in zip(params, grads):\n        p.add_(g, alpha=-0.01)\n", namespace)
    jitted = fusion_alias.jit(namespace["step"], backend="reference")
    params, grads = [torch.ones(4)], [torch.ones(4)]
    jitted(params, grads)
    (jfn,) = jitted._jitted
    assert not any(isinstance(e.prologue_fn, _GuardedPrologue) for e in jfn._lc_cs.interpreter_cache)
    torch.testing.assert_close(params[0], torch.full((4,), 0.99))
