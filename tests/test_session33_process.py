"""Session 33: process-wide settings read inside the function change between calls.

Thunder 0.2.6 calls ``torch.are_deterministic_algorithms_enabled()``, ``torch.get_num_threads()`` or
``os.getenv("K")`` once while tracing, and its prologue checks none of them: a cached program kept the
first call's answer, silently (plain ``thunder.jit`` too; session 32 probes). fusion_alias.jit guards each
read (process_state.py, Note [a process setting read inside the function]). Each test writes in place
and compares outputs and the written argument with eager at every call, under both reference schedules."""

import os

import pytest
import torch

import fusion_alias

SCHEDULES = ("reads-first", "writes-first")
_VAR = "FUSION_ALIAS_TEST_SESSION33"


@pytest.fixture(autouse=True)
def _restore_process():
    det, warn_only = torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled()
    threads = torch.get_num_threads()
    old = os.environ.pop(_VAR, None)
    yield
    torch.use_deterministic_algorithms(det, warn_only=warn_only)
    torch.set_num_threads(threads)
    os.environ.pop(_VAR, None)
    if old is not None:
        os.environ[_VAR] = old


def _calls_match_eager(fn, states, schedule):
    """Call ``fn`` jitted and eager once per state (a function that sets the process state first);
    outputs and the written argument must be eager's at every call."""
    jitted = fusion_alias.jit(fn, backend="reference", schedule=schedule)
    for set_state in states:
        set_state()
        x_e, x_j = torch.arange(3.0), torch.arange(3.0)
        expected, got = fn(x_e), jitted(x_j)
        torch.testing.assert_close(got, expected, rtol=0, atol=0)
        torch.testing.assert_close(x_j, x_e, rtol=0, atol=0)
    return jitted


def _programs(jitted) -> int:
    """The programs compiled: cache entries of every Thunder function made (api.py, Note [a guard Thunder's
    cache falls through]: a call its entries' guards refuse compiles another entry of the same function)."""
    return sum(len(jfn._lc_cs.interpreter_cache) for jfn in jitted._jitted)


def _deterministic(on: bool):
    return lambda: torch.use_deterministic_algorithms(on)


def _branches_on_determinism(x):
    x.add_(1)
    if torch.are_deterministic_algorithms_enabled():
        return x * 2
    return x * 3


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_deterministic_algorithms_switched_between_calls(schedule):
    states = [_deterministic(False), _deterministic(True), _deterministic(False), _deterministic(True)]
    jitted = _calls_match_eager(_branches_on_determinism, states, schedule)
    assert _programs(jitted) == 2  # (one program per setting, found again)


def _scaled_by_threads(x):
    x.mul_(2)
    return x * torch.get_num_threads()


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_thread_count_changed_between_calls(schedule):
    n = torch.get_num_threads()
    other = 1 if n != 1 else 2
    states = [lambda: torch.set_num_threads(n), lambda: torch.set_num_threads(other), lambda: torch.set_num_threads(n)]
    _calls_match_eager(_scaled_by_threads, states, schedule)


def _set_var(value):
    def set_state():
        if value is None:
            os.environ.pop(_VAR, None)
        else:
            os.environ[_VAR] = value
    return set_state


def _scaled_by_getenv(x):
    x.sub_(1)
    return x * int(os.getenv(_VAR, "1"))


def _branches_on_get(x):
    x.add_(2)
    if os.environ.get(_VAR) == "on":
        return x.exp()
    return x.tanh()


def _branches_on_membership(x):
    x.mul_(3)
    return x + 1 if _VAR in os.environ else x - 1


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("fn, values", [
    (_scaled_by_getenv, ["1", "5", None, "5", "2"]),
    (_branches_on_get, ["on", "off", None, "on"]),
    (_branches_on_membership, [None, "x", None, "y"]),
])
def test_environment_variable_changed_between_calls(fn, values, schedule):
    jitted = _calls_match_eager(fn, [_set_var(v) for v in values], schedule)
    assert _programs(jitted) <= len(set(values))


def _reads_missing_variable(x):
    x.add_(1)
    return x * int(os.environ[_VAR])


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_a_missing_variable_raises_as_in_eager(schedule):
    jitted = fusion_alias.jit(_reads_missing_variable, backend="reference", schedule=schedule)
    with pytest.raises(KeyError, match=_VAR):
        _reads_missing_variable(torch.arange(3.0))
    with pytest.raises(KeyError, match=_VAR):
        jitted(torch.arange(3.0))
    os.environ[_VAR] = "4"
    x_e, x_j = torch.arange(3.0), torch.arange(3.0)
    torch.testing.assert_close(jitted(x_j), _reads_missing_variable(x_e), rtol=0, atol=0)
    torch.testing.assert_close(x_j, x_e, rtol=0, atol=0)


def test_an_unchanged_setting_reuses_the_program():
    os.environ[_VAR] = "3"
    jitted = fusion_alias.jit(_scaled_by_getenv, backend="reference")
    for _ in range(4):
        x_e, x_j = torch.arange(3.0), torch.arange(3.0)
        torch.testing.assert_close(jitted(x_j), _scaled_by_getenv(x_e), rtol=0, atol=0)
    assert _programs(jitted) == 1


class _ThreadScaled(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("steps", torch.zeros(()))

    def forward(self, x):
        self.steps.add_(1)
        scale = 2.0 if torch.are_deterministic_algorithms_enabled() else 0.5
        return x * scale + self.steps


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_a_module_reading_a_setting(schedule):
    eager, compiled = _ThreadScaled(), _ThreadScaled()
    jitted = fusion_alias.jit(compiled, backend="reference", schedule=schedule)
    for on in (False, True, False):
        torch.use_deterministic_algorithms(on)
        x = torch.arange(3.0)
        torch.testing.assert_close(jitted(x.clone()), eager(x.clone()), rtol=0, atol=0)
        torch.testing.assert_close(compiled.steps, eager.steps, rtol=0, atol=0)


def test_a_function_reading_no_setting_records_nothing():
    def f(x):
        x.add_(1)
        return x * 2
    jitted = fusion_alias.jit(f, backend="reference")
    jitted(torch.arange(3.0))
    torch.use_deterministic_algorithms(True)
    os.environ[_VAR] = "anything"
    jitted(torch.arange(3.0))
    assert _programs(jitted) == 1


EXTRA = None


def _reads_a_global(x):
    x.add_(1)
    return x * 2 if EXTRA is None else x + EXTRA


def test_two_states_alternating_compile_two_programs():
    """A, B, A, B, ... of what the program reads outside its arguments (here a global None or a tensor)
    compiled a new program every second call (api.py, Note [a guard Thunder's cache falls through])."""
    global EXTRA
    jitted = fusion_alias.jit(_reads_a_global, backend="reference")
    try:
        for extra in (None, torch.ones(3)) * 4:
            EXTRA = extra
            x_e, x_j = torch.arange(3.0), torch.arange(3.0)
            torch.testing.assert_close(jitted(x_j), _reads_a_global(x_e), rtol=0, atol=0)
            torch.testing.assert_close(x_j, x_e, rtol=0, atol=0)
    finally:
        EXTRA = None
    assert _programs(jitted) == 2


HIDDEN = None


def _writes_then_reads_hidden(x):
    x.mul_(2)
    return x + HIDDEN


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_hidden_aliasing_alternating_between_calls(schedule):
    """A global that is the argument itself at one call and an independent tensor at the next, alternately:
    each call runs the program compiled for its aliasing (eager's values under both schedules), and the two
    programs are found again, not compiled anew (the old guard compiled one per call after the first two)."""
    global HIDDEN
    jitted = fusion_alias.jit(_writes_then_reads_hidden, backend="reference", schedule=schedule)
    try:
        for i in range(6):
            x_e, x_j = torch.arange(4.0), torch.arange(4.0)
            if i % 2 == 0:
                HIDDEN = x_e
                expected = _writes_then_reads_hidden(x_e)
                HIDDEN = x_j
            else:
                HIDDEN = torch.ones(4)
                expected = _writes_then_reads_hidden(x_e)
            torch.testing.assert_close(jitted(x_j), expected, rtol=0, atol=0)
            torch.testing.assert_close(x_j, x_e, rtol=0, atol=0)
    finally:
        HIDDEN = None
    assert _programs(jitted) == 2
