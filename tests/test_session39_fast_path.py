"""Session 39: an optimizer step's numbers and keywords on the guard's fast path (guard.py, Note [a step's
numbers and keywords on the fast path]).

``step(params, grads, 0.01)`` and ``step(params, grads, lr=0.01)`` went through Thunder's ``tree_flatten``
and a ``repr`` of its spec on every call. They flatten as the plain lists do now; these tests check that the
key still tells apart what must compile apart (aliasing, the number's type, keyword names, nesting), and
that a number or a flag changed between calls is still seen (Thunder's prologue checks them), against eager
on fresh inputs under both reference schedules.
"""

import collections

import pytest
import torch

import fusion_alias
from fusion_alias.guard import deque_numbers, flat_sequences

SCHEDULES = ["reads-first", "writes-first"]


def step(params, grads, lr=0.01, nesterov=False):
    for p, g in zip(params, grads):
        p.add_(g * (2.0 if nesterov else 1.0), alpha=-lr)
    return params[0] * 1


def _inputs(aliased: bool):
    flat = torch.arange(8.0)
    if aliased:  # the second gradient is the first parameter: the step reads what it wrote
        return [flat[0:2], flat[2:4]], [flat[4:6], flat[0:2]]
    return [flat[0:2].clone(), flat[2:4].clone()], [flat[4:6].clone(), flat[6:8].clone()]


def test_the_structure_keys_numbers_by_type_and_keywords_by_name():
    a, b = torch.zeros(2), torch.zeros(2)
    flat, spec = flat_sequences(([a, b], 1), {"lr": 0.5})
    assert flat == [a, b, 1, 0.5]
    assert spec != flat_sequences(([a, b], 1.0), {"lr": 0.5})[1]
    assert spec != flat_sequences(([a, b], 1), {"eta": 0.5})[1]
    assert spec != flat_sequences(([a], [b], 1), {"lr": 0.5})[1]
    assert flat_sequences((a,), {"x": 1, "y": 2})[1] == flat_sequences((a,), {"y": 2, "x": 1})[1]  # (as tree_flatten)
    flat, spec = flat_sequences(([a, b], "s", None))
    assert flat == [a, b, "s", None] and spec != flat_sequences(([a, b], "s", 0))[1]
    assert flat_sequences(([a, b], torch.float32), None) == (None, None)  # a dtype: tree_flatten's path
    assert flat_sequences(([a, 1.0],), None) == (None, None)  # a number inside a list: likewise


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("spelling", ["positional", "keyword"])
def test_a_step_with_its_learning_rate(schedule, spelling):
    jitted = fusion_alias.jit(step, backend="reference", schedule=schedule)
    for lr, nesterov, aliased in [(0.5, False, False), (0.25, False, False), (0.25, True, True), (0.5, False, True),
                                  (0.5, False, False)]:
        want_p, want_g = _inputs(aliased)
        got_p, got_g = _inputs(aliased)
        if spelling == "positional":
            want, got = step(want_p, want_g, lr, nesterov), jitted(got_p, got_g, lr, nesterov)
        else:
            want, got = step(want_p, want_g, lr=lr, nesterov=nesterov), jitted(got_p, got_g, lr=lr, nesterov=nesterov)
        torch.testing.assert_close(got, want)
        for x, y in zip(got_p + got_g, want_p + want_g):
            torch.testing.assert_close(x, y)
    assert jitted.compiled_structures >= 2  # (aliased and not: one program each)


def momentum_step(p, g, state):
    m = state["m"]
    m.mul_(state["beta"]).add_(g)
    p.sub_(m, alpha=0.1)
    return state["step"] + 1


def optional_mask(x, mask, mode):
    x.mul_(2)
    if mask is not None:
        x.masked_fill_(mask, 0.0)
    return x.sum() if mode == "sum" else x.mean()


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_a_none_and_a_string_between_calls(schedule):
    """A None argument keys the call (guard.py, Note [an argument that is None]); a string is checked by Thunder."""
    jitted = fusion_alias.jit(optional_mask, backend="reference", schedule=schedule)
    mask = torch.tensor([True, False, True])
    for m, mode in [(None, "sum"), (mask, "sum"), (None, "mean"), (mask, "mean"), (None, "sum")]:
        want_x, got_x = torch.arange(3.0), torch.arange(3.0)
        torch.testing.assert_close(jitted(got_x, m, mode), optional_mask(want_x, m, mode))
        torch.testing.assert_close(got_x, want_x)
        want_x, got_x = [torch.arange(3.0)], [torch.arange(3.0)]  # (by keyword: flat_sequences takes the call)
        torch.testing.assert_close(jitted(*got_x, mask=m, mode=mode), optional_mask(*want_x, mask=m, mode=mode))
        torch.testing.assert_close(got_x, want_x)


def test_a_state_dict_flattens_by_key():
    a, b = torch.zeros(2), torch.zeros(2)
    flat, spec = flat_sequences((a, {"m": b, "beta": 0.9}))
    assert flat == [a, 0.9, b]  # (values by sorted key, as tree_flatten)
    assert spec != flat_sequences((a, {"m": b, "beta2": 0.9}))[1]
    assert spec != flat_sequences((a, {"m": [b], "beta": 0.9}))[1]
    assert flat_sequences((a, {"m": {"x": b}}))[0] is None  # (a dict in a dict: tree_flatten's path)
    assert flat_sequences((a, {1: b}))[0] is None
    assert flat_sequences((a, collections.OrderedDict(m=b)))[0] is None


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_a_state_dict_whose_aliasing_and_numbers_change(schedule):
    jitted = fusion_alias.jit(momentum_step, backend="reference", schedule=schedule)
    for beta, step, aliased in [(0.9, 1, False), (0.5, 2, False), (0.5, 3, True), (0.9, 4, False), (0.9, 5, True)]:
        runs = []
        for _ in range(2):
            buf = torch.arange(6.0)
            p, g = buf[0:2], buf[2:4]
            m = buf[2:4] if aliased else buf[4:6]  # aliased: the momentum is the gradient's memory (another view)
            runs.append((buf, (p, g, {"m": m, "beta": beta, "step": step})))
        (want_buf, want_args), (got_buf, got_args) = runs
        want = momentum_step(*want_args)
        assert jitted(*got_args) == want
        torch.testing.assert_close(got_buf, want_buf)


def test_a_deque_still_keys_its_numbers():
    """Note [numbers inside a deque argument]: the spec's answer is remembered per spec, still asked."""
    x = torch.zeros(2)
    from thunder.core.pytree import tree_flatten

    for _ in range(2):
        flat, spec = tree_flatten(((x, collections.deque([2.0])), {}))
        assert deque_numbers(spec, flat) == ((float, (2.0).hex()),)
    flat, spec = tree_flatten(((x, [2.0]), {}))
    assert deque_numbers(spec, flat) == ()

    def scale(x, d):
        return x * d[0]

    jitted = fusion_alias.jit(scale, backend="reference")
    for k in (2.0, 3.0, 2.0):
        torch.testing.assert_close(jitted(torch.ones(2), collections.deque([k])), torch.full((2,), k))
