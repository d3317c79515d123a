"""Session 37: ``fill_`` and ``copy_`` take their arguments under eager's keywords (inplace_lookasides.py,
Note [eager's keywords for fill_ and copy_]). ``x.copy_(src=y)``, which eager refuses (its binding names the
source ``other``), ran: a missed rejection; ``x.copy_(other=y)``, ``x.fill_(value=v)`` and
``torch.fill_(input=x, value=v)``, which eager runs, raised a TypeError. Plain ``thunder.jit`` raises on all."""

import pytest
import torch

from helpers import assert_same, run_both

SCHEDULES = ("reads-first", "writes-first")

RUNS = {
    "fill_ value=": lambda a, b: (a.fill_(value=2.5), b * 1),
    "fill_ value= a tensor": lambda a, b: (a.fill_(value=b[0, 0]), b * 1),
    "torch.fill_ input= value=": lambda a, b: (torch.fill_(input=a[1], value=-1.0), b * 1),
    "copy_ other=": lambda a, b: (a.copy_(other=b[:2].flip(0) * 2), b * 1),
    "copy_ other= broadcast": lambda a, b: (a.copy_(other=b[0] * 2), b * 1),
    "copy_ other= non_blocking=": lambda a, b: (a[0].copy_(other=b[1] * 3, non_blocking=True), a * 1),
}


def _aliased(base):
    """``(base's rows 1 and 2, base)``: the writes land in memory the other argument reads."""
    return base[1:3], base


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("name", list(RUNS))
def test_eagers_keywords_run_as_eager(name, schedule):
    fn = RUNS[name]
    for make in (_aliased, lambda base: (base[1:3].clone(), base)):
        _, got, want, state_jit, state_eager = run_both(fn, make, schedule=schedule)
        assert_same(got, want, state_jit, state_eager)


REFUSED = {
    "copy_ src=": lambda a: a.copy_(src=a.t() * 1),
    "fill_ a=": lambda a: a.fill_(a=1.0),
    "torch.fill_ self=": lambda a: torch.fill_(self=a, value=1.0),
}


@pytest.mark.parametrize("name", list(REFUSED))
def test_keywords_eager_refuses_are_refused(name):
    import fusion_alias

    fn = REFUSED[name]
    with pytest.raises(TypeError):
        fn(torch.ones(3, 3))
    with pytest.raises(TypeError):
        fusion_alias.jit(fn)(torch.ones(3, 3))
