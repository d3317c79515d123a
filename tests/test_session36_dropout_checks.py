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
