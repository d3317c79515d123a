"""Session 34: a Python number the function changes and reads, in an object that outlives the call (errors.py, Note
[a number the function changes and reads]). Thunder 0.2.6 raised its prologue check's words ("Expected 1 to be equal
to and have the type of 0", plain ``thunder.jit`` too); ``fusion_alias.jit`` now refuses by name, with the ways
around it, and the way around (a tensor changed in place) runs as eager."""

import pytest
import thunder
import torch

import fusion_alias
from fusion_alias.errors import number_changed_while_tracing


def _global_list():
    count = [0]

    def fn(x):
        count[0] += 1
        return x * count[0]

    return fn, lambda: (torch.ones(3),)


def _dict_argument():
    state = {"step": 0}

    def fn(x, st):
        st["step"] += 1
        return x * st["step"]

    return fn, lambda: (torch.ones(3), state)


def _closure_variable():
    i = 0

    def fn(x):
        nonlocal i
        i += 1
        return x * i

    return fn, lambda: (torch.ones(3),)


CASES = {"global list": _global_list, "dict argument": _dict_argument, "closure variable": _closure_variable}


@pytest.mark.parametrize("schedule", ["reads-first", "writes-first"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_a_number_changed_and_read_is_refused_by_name(case, schedule):
    fn, args = CASES[case]()
    jitted = fusion_alias.jit(fn, backend="reference", schedule=schedule)
    for _ in range(2):  # (every call: Thunder compiles again, and its prologue finds the number changed again)
        with pytest.raises(NotImplementedError, match="changes a Python number it reads from an object that outlives"):
            jitted(*args())


def test_plain_thunder_raises_its_prologue_check():
    """What the refusal replaces (if a Thunder version traces these right, this test says so)."""
    fn, args = _global_list()
    with pytest.raises(RuntimeError, match="Expected 1 to be equal to and have the type of 0"):
        thunder.jit(fn)(*args())


def test_other_errors_are_not_taken_for_it():
    assert number_changed_while_tracing(RuntimeError("Expected 1 to be equal to and have the type of 0")) is not None
    assert number_changed_while_tracing(RuntimeError("shape mismatch")) is None
    assert number_changed_while_tracing(ValueError("Expected 1 to be equal to and have the type of 0")) is None


@pytest.mark.parametrize("schedule", ["reads-first", "writes-first"])
def test_the_way_around_a_tensor_changed_in_place_runs_as_eager(schedule):
    def fn(x, st):
        st["step"].add_(1)
        return x * st["step"]

    eager_state, jit_state = {"step": torch.zeros(())}, {"step": torch.zeros(())}
    jitted = fusion_alias.jit(fn, backend="reference", schedule=schedule)
    for _ in range(3):
        x = torch.randn(3)
        torch.testing.assert_close(jitted(x.clone(), jit_state), fn(x.clone(), eager_state))
        torch.testing.assert_close(jit_state["step"], eager_state["step"])
