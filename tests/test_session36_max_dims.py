"""Session 36 (helper): ``torch.max``/``torch.min`` along a dim check that dim as eager does (min_max.py, Note [a
max's dim is checked as eager checks it]). ``_along`` wrapped an out-of-range dim (``torch.max(x, 5)`` of a 3-d
float ``x`` reduced dim 2) and took a float one for an int (``torch.max(x, 1.5)``) where eager raises (plain
``thunder.jit`` raises): missed rejections."""

import pytest
import torch

import fusion_alias

SCHEDULES = ("reads-first", "writes-first")
REFUSED = {
    "torch.max(x, 5)": (lambda x: torch.max(x, 5), IndexError),
    "x.max(5)": (lambda x: x.max(5), IndexError),
    "torch.max keepdim": (lambda x: torch.max(x, 3, keepdim=True), IndexError),
    "torch.min(x, -4)": (lambda x: torch.min(x, -4), IndexError),
    "x.min(dim=3)": (lambda x: x.min(dim=3), IndexError),
    "0-d, dim 1": (lambda x: torch.max(x[0, 0, 0], 1), IndexError),
    "torch.max(x, 1.5)": (lambda x: torch.max(x, 1.5), TypeError),
    "torch.min(x, 1.5)": (lambda x: torch.min(x, 1.5), TypeError),
}
RUN = {
    "torch.max(x, -3)": lambda x: torch.max(x, -3),
    "x.min(dim=2, keepdim=True)": lambda x: x.min(dim=2, keepdim=True),
    "0-d, dim -1": lambda x: torch.max(x[0, 0, 0], -1),
    "int64, dim 1": lambda x: torch.max(x.long(), 1),
    "max(x, y)": lambda x: torch.max(x, x * 2),
}


def _base():
    return torch.arange(48.0).reshape(2, 3, 8).sin()


def _program(fn):
    def f(x, y):
        y.mul_(2)  # (y is x[1]: the reduction reads x after a write through a view)
        return fn(x), x

    return f


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("case", list(REFUSED))
def test_a_dim_eager_refuses_is_refused(case, schedule):
    fn, error = REFUSED[case]
    x = _base()
    with pytest.raises(error):
        _program(fn)(x, x[1])
    x = _base()
    with pytest.raises(error):
        fusion_alias.jit(_program(fn), schedule=schedule)(x, x[1])


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("case", list(RUN))
def test_a_dim_eager_takes_gives_eagers_values(case, schedule):
    f = _program(RUN[case])
    xe, xj = _base(), _base()
    want, got = f(xe, xe[1]), fusion_alias.jit(f, schedule=schedule)(xj, xj[1])
    want, got = [*want[0], want[1]] if isinstance(want[0], tuple) else list(want), \
        [*got[0], got[1]] if isinstance(got[0], tuple) else list(got)
    for w, g in zip(want, got):
        torch.testing.assert_close(g, w)
