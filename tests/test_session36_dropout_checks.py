"""Session 36 (helper): eager's argument checks of the dropout functions, before any shortcut.

A hand probe of the in-place activations and dropouts (``F.relu(inplace=True)``, ``nn.Hardswish(inplace=True)``,
``F.dropout*`` with ``inplace`` and ``training`` both ways, through a row of ``x`` and an argument that is a row of
another) found every value eager's but these missed rejections: a dropout probability outside [0, 1] in evaluation
mode (``F.dropout`` also with ``inplace=False``), or with ``inplace=True``, and ``F.dropout1d(..., inplace=True)``
of an input that is not 2-D or 3-D. Eager raises; fusion_alias's lookasides returned the input (plain
``thunder.jit`` raises eager's error). Fixed: dropout_checks.py, Note [a dropout's arguments are checked before the
shortcut]."""

import pytest
import torch
import torch.nn.functional as F

import fusion_alias

SCHEDULES = ("reads-first", "writes-first")
FUNCTIONS = {"dropout": F.dropout, "alpha_dropout": F.alpha_dropout, "feature_alpha_dropout": F.feature_alpha_dropout,
             "dropout1d": F.dropout1d, "dropout2d": F.dropout2d, "dropout3d": F.dropout3d}


def _base():
    return torch.arange(24.0).reshape(2, 3, 4) / 5 - 2


def _through_a_view(fn, p, training, inplace):
    def f(x, y):
        r = fn(y[1:], p, training=training, inplace=inplace)  # y is x[0]: the write lands in x
        return r, x * 2
    return f


def _outcome(f, schedule=None):
    x = _base()
    args = (x, x[0])
    g = f if schedule is None else fusion_alias.jit(f, schedule=schedule)
    try:
        return ("ok", g(*args), x)
    except (ValueError, RuntimeError) as e:
        return ("raised", type(e), str(e).split("\n")[0])


REFUSED = [(name, p, training, inplace) for name in FUNCTIONS for p in (-0.5, 1.5)
           for training, inplace in ((False, True), (True, True), (False, False))
           if not (training and not inplace)]


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("name,p,training,inplace", REFUSED)
def test_a_probability_outside_0_1_raises_eagers_error(name, p, training, inplace, schedule):
    f = _through_a_view(FUNCTIONS[name], p, training, inplace)
    expected = _outcome(f)
    assert expected[0] == "raised"
    got = _outcome(f, schedule)
    assert got == expected


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("shape", [(6,), (2, 3, 4, 5)])
@pytest.mark.parametrize("training", [False, True])
def test_dropout1d_in_place_of_a_wrong_rank_raises_eagers_error(shape, training, schedule):
    def f(x):
        F.dropout1d(x, 0.0, training=training, inplace=True)
        return x * 1
    try:
        f(torch.ones(shape))
        raise AssertionError("eager ran")
    except RuntimeError as e:
        message = str(e)
    with pytest.raises(RuntimeError) as got:
        fusion_alias.jit(f, schedule=schedule)(torch.ones(shape))
    assert str(got.value) == message


RUN = [(name, p, training, inplace) for name in FUNCTIONS for p in (0.0, 0.5, 1.0)
       for training, inplace in ((False, True), (False, False), (True, True)) if not (training and 0 < p < 1)]


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("name,p,training,inplace", RUN)
def test_dropouts_eager_runs_keep_eagers_values(name, p, training, inplace, schedule):
    """(right before too: the checks refuse nothing eager runs; p is 0 or 1 where masks are drawn)"""
    f = _through_a_view(FUNCTIONS[name], p, training, inplace)
    expected, got = _outcome(f), _outcome(f, schedule)
    assert expected[0] == got[0] == "ok"
    for e, g in zip((*expected[1], expected[2]), (*got[1], got[2])):
        torch.testing.assert_close(g, e, equal_nan=True)


# Note [rrelu's arguments, checked as eager checks them] (dropout_checks.py): evaluation-mode rrelu ran without
# eager's bound check and of dtypes eager has no kernel for
RRELU_REFUSED = {
    "F.rrelu lower > upper": lambda y: F.rrelu(y, 0.5, 0.1, training=False),
    "F.rrelu_ lower > upper": lambda y: F.rrelu_(y, 0.5, 0.1, training=False),
    "inplace, keywords": lambda y: F.rrelu(y, upper=0.05, lower=0.2, inplace=True),
    "torch.rrelu NaN lower": lambda y: torch.rrelu(y, float("nan"), 0.1),
    "torch.rrelu_ lower > upper": lambda y: torch.rrelu_(y, 0.5, 0.1),
    "int64 in place": lambda y: F.rrelu(y.long(), training=False, inplace=True),
    "bool": lambda y: F.rrelu(y > 0),
    "int64 training": lambda y: F.rrelu(y.long(), training=True),
}
RRELU_RUN = {
    "eval": lambda y: F.rrelu(y, 0.1, 0.3, training=False),
    "eval in place": lambda y: F.rrelu(y, 0.1, 0.3, training=False, inplace=True),
    "equal bounds, training": lambda y: F.rrelu(y, 0.2, 0.2, training=True),
    "float16 in place": lambda y: F.rrelu_(y.half()),
}


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("case", list(RRELU_REFUSED) + list(RRELU_RUN))
def test_rrelu_checks_its_arguments_as_eager(case, schedule):
    fn = {**RRELU_REFUSED, **RRELU_RUN}[case]

    def f(x, y):
        return fn(y[1:]), x * 2

    expected, got = _outcome_of(f), _outcome_of(f, schedule)
    assert got[0] == expected[0] == ("raised" if case in RRELU_REFUSED else "ok"), (expected, got)
    if expected[0] == "raised":
        assert got[1] is expected[1] and got[2].endswith(expected[2]) or expected[2] in got[2], (expected, got)
    else:
        for e, g in zip((*expected[1], expected[2]), (*got[1], got[2])):
            torch.testing.assert_close(g, e)


def _outcome_of(f, schedule=None):
    x = _base()
    g = f if schedule is None else fusion_alias.jit(f, schedule=schedule)
    try:
        return ("ok", g(x, x[0]), x)
    except (RuntimeError, NotImplementedError) as e:
        return ("raised", type(e), str(e).split("\n")[0].removesuffix(" (eager PyTorch rejects this too)"))
