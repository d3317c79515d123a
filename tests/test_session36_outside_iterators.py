"""Session 36: an iterator that outlives the call, advanced inside the function (outside_reads.py, Note [an
iterator that outlives the call]).

Thunder 0.2.6's interpreter advances such an iterator once, while tracing, and the trace keeps the value: every
later call returned the first call's value, silently (plain ``thunder.jit`` too; session 36 probe). Now refused by
name at the first call; iterators the function makes itself still run, with eager's values at every call.
"""

import itertools
import types

import pytest
import torch

import fusion_alias
from helpers import generated_programs
from fusion_alias.errors import TracingRefusal

SCHEDULES = ["reads-first", "writes-first"]


def _counter():
    counter = itertools.count()
    return lambda x: x.add_(next(counter)), ()


def _generator():
    def numbers():
        i = 0
        while True:
            i += 1
            yield float(i)

    g = numbers()
    return lambda x: x.add_(next(g)), ()


def _global_style_for_loop():
    it = iter([1.0, 2.0, 3.0, 4.0])

    def fn(x):
        for v in it:
            x.add_(v)
            break
        return x

    return fn, ()


def _attribute():
    holder = types.SimpleNamespace(it=iter([1.0, 2.0, 3.0]))
    return lambda x: x.add_(next(holder.it)), ()


def _argument():
    return lambda x, it: x.add_(next(it)), (iter([1.0, 2.0, 3.0]),)


class _Stream(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.it = iter([1.0, 2.0, 3.0])

    def forward(self, x):
        return x.add_(next(self.it))


REFUSED = {
    "itertools-count": _counter,
    "generator": _generator,
    "for-loop": _global_style_for_loop,
    "attribute": _attribute,
    "argument": _argument,
    "module-attribute": lambda: (_Stream(), ()),
}


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("case", sorted(REFUSED))
def test_an_outside_iterator_is_refused(case, schedule):
    fn, extra = REFUSED[case]()
    jitted = fusion_alias.jit(fn, backend="reference", schedule=schedule)
    with pytest.raises(TracingRefusal, match="iterator that outlives the call"):
        jitted(torch.zeros(3), *extra)


LIST = [1.0, 2.0, 3.0]
DICT = {"a": 1.0, "b": 2.0}

RUN = {
    "iter-of-a-global-list": lambda x: x.add_(next(iter(LIST))),
    "zip-of-globals": lambda x: x.add_(sum(a * b for a, b in zip(LIST, LIST))),
    "dict-items": lambda x: x.add_(sum(v for _, v in DICT.items())),
    "map-and-reversed": lambda x: x.add_(sum(map(float, reversed(LIST)))),
    "enumerate": lambda x: x.add_(sum(i * v for i, v in enumerate(LIST))),
}


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("case", sorted(RUN))
def test_an_iterator_made_inside_runs(case, schedule):
    fn = RUN[case]
    jitted = fusion_alias.jit(fn, backend="reference", schedule=schedule)
    for _ in range(3):
        xe, xj = torch.zeros(3), torch.zeros(3)
        torch.testing.assert_close(jitted(xj), fn(xe))
        torch.testing.assert_close(xj, xe)


def test_a_module_iterating_its_layers_runs():
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Linear(3, 3), torch.nn.ReLU(), torch.nn.Linear(3, 2))

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = torch.nn.ModuleList([m, torch.nn.Linear(2, 2)])

        def forward(self, x):
            for layer in self.layers:
                x = layer(x)
            return x + sum(p.sum() for p in self.parameters())

    net = Net()
    jitted = fusion_alias.jit(net, backend="reference")
    x = torch.randn(4, 3)
    for _ in range(2):
        torch.testing.assert_close(jitted(x), net(x))


# The generator form (fuzz/hidden_numbers.py, ``number_iterator``): with P_NUMBER and P_ITERATOR 1, seed 36004 (30
# programs, reference backend, 3 schedules): 1 mismatch and 8 missed rejections on the code before, 0 / 0 / 0 after
# (27 runs refused by name).


def test_the_hidden_generator_reads_a_number_from_an_outside_iterator(monkeypatch):
    from fusion_alias.fuzz import hidden_numbers, oracle

    monkeypatch.setattr(hidden_numbers, "P_NUMBER", 1.0)
    monkeypatch.setattr(hidden_numbers, "P_ITERATOR", 1.0)
    programs = generated_programs(("hidden",), 36004, 20)
    iterators = 0
    for p in programs:
        (kind,) = [k for h, k, _ in p.hidden if h == hidden_numbers.NAME]
        assert kind != "number_dict"
        refusals = [s.must_refuse for s in p.stmts if s.must_refuse]
        if kind == hidden_numbers.ITERATOR:
            iterators += 1
            src = oracle.program_source(p)
            assert "ITERS = {}" in src and "    n0 = next(ITERS['n0'])" in src
            assert "    ITERS['n0'] = iter([hidden['n0']])" in src
            assert refusals == [hidden_numbers.ITERATOR_REFUSAL]
        else:
            assert hidden_numbers.ITERATOR_REFUSAL not in refusals
    assert iterators >= 4
