"""Session 39 (helper): a number read through a call Thunder runs opaquely (``vars(type(o))["k"]``,
``type(o).__dict__["k"]``, ``vars(o)["k"]``, ``object.__getattribute__(o, "k")``, ``type(o).mro()[1].k``,
``inspect.getattr_static``) and set between calls ran the first call's number, silently (plain ``thunder.jit`` too;
opaque_reads.py, Note [a dict or an attribute read through an opaque call]); and ``x.__class__`` of a tensor read
the proxy's class from the first call (type_reads.py, Note [the type of a tensor]). Each test calls with the first
value, a changed one, then the first again, against eager on fresh inputs each call, the written input too, under
both reference schedules.
"""

import inspect
import types

import pytest
import thunder
import torch

import fusion_alias
from helpers import run_on_ones, run_with_values_set_between_calls

SCHEDULES = ["reads-first", "writes-first"]


class Cfg:
    k = 2.0


class Sub(Cfg):
    pass


class Obj:
    def __init__(self):
        self.k = 2.0


_CFG, _SUB, _OBJ = Cfg(), Sub(), Obj()
NS = types.SimpleNamespace(k=2.0)


def _set_class(v):
    Cfg.k = v


def _set_object(v):
    _OBJ.k = v


def _set_namespace(v):
    NS.k = v


# name -> (function, its extra arguments, setter of the number)
READS = {
    "vars(type(o))[k]": (lambda x, o: x.mul_(vars(type(o))["k"]), (_CFG,), _set_class),
    "type(o).__dict__[k]": (lambda x, o: x.mul_(type(o).__dict__["k"]), (_CFG,), _set_class),
    "o.__class__.__dict__[k]": (lambda x, o: x.mul_(o.__class__.__dict__["k"]), (_CFG,), _set_class),
    "vars(global class)[k]": (lambda x: x.mul_(vars(Cfg)["k"]), (), _set_class),
    "global class.__dict__.get(k)": (lambda x: x.mul_(Cfg.__dict__.get("k", 1.0)), (), _set_class),
    "type(o).__dict__.get(k)": (lambda x, o: x.mul_(type(o).__dict__.get("k", 1.0)), (_CFG,), _set_class),
    "vars(base of type(o))[k]": (lambda x, o: x.mul_(vars(type(o).__base__)["k"]), (_SUB,), _set_class),
    "type(o).mro()[1].k": (lambda x, o: x.mul_(type(o).mro()[1].k), (_SUB,), _set_class),
    "object.__getattribute__(o, k)": (lambda x, o: x.mul_(object.__getattribute__(o, "k")), (_CFG,), _set_class),
    "type.__getattribute__(type(o), k)": (lambda x, o: x.mul_(type.__getattribute__(type(o), "k")), (_CFG,),
                                          _set_class),
    "inspect.getattr_static(o, k)": (lambda x, o: x.mul_(inspect.getattr_static(o, "k")), (_CFG,), _set_class),
    "vars(o)[k]": (lambda x, o: x.mul_(vars(o)["k"]), (_OBJ,), _set_object),
    "sum(vars(o).values())": (lambda x, o: x.mul_(sum(vars(o).values())), (_OBJ,), _set_object),
    "vars(global namespace)[k]": (lambda x: x.mul_(vars(NS)["k"]), (), _set_namespace),
}


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("case", list(READS))
def test_a_number_read_through_an_opaque_call_set_between_calls(case, schedule):
    fn, extra, set_value = READS[case]
    run_with_values_set_between_calls(fn, extra, set_value, fusion_alias.jit(fn, backend="reference", schedule=schedule))


@pytest.mark.parametrize("case", ["vars(type(o))[k]", "vars(o)[k]", "object.__getattribute__(o, k)"])
def test_plain_thunder_is_wrong_there(case):
    fn, extra, set_value = READS[case]
    with pytest.raises(AssertionError):
        run_with_values_set_between_calls(fn, extra, set_value, thunder.jit(fn))


def test_the_same_number_reuses_the_program():
    fn, extra, _ = READS["vars(type(o))[k]"]
    jitted = fusion_alias.jit(fn, backend="reference")
    for _ in range(3):
        run_on_ones(fn, extra, jitted)
    assert (thunder.cache_hits(jitted), thunder.cache_misses(jitted)) == (2, 1)


class Loud:
    k = 2.0

    def __getattribute__(self, name):  # (``o.k`` answers otherwise: object.__getattribute__ is not respelled)
        return 5.0 if name == "k" else object.__getattribute__(self, name)


def test_object_getattribute_of_a_class_with_its_own_getattribute():
    fn = READS["object.__getattribute__(o, k)"][0]
    jitted = fusion_alias.jit(fn, backend="reference")
    run_on_ones(fn, (Loud(),), jitted)


def _tensor_classes(x, w):
    a = 2.0 if x.__class__ is torch.Tensor else 3.0
    b = 5.0 if w.__class__ is torch.nn.Parameter else 7.0
    c = 11.0 if getattr(w, "__class__").__name__ == "Parameter" else 13.0
    d = 17.0 if issubclass(w.__class__, torch.nn.Parameter) else 19.0
    return x.mul_(a * b * c * d).add_(x * 2)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_the_class_attribute_of_a_tensor_and_a_parameter(schedule):  # (type_reads.py, Note [the type of a tensor])
    jitted = fusion_alias.jit(_tensor_classes, backend="reference", schedule=schedule)
    for w in (torch.ones(2), torch.nn.Parameter(torch.ones(2)), torch.ones(2)):
        run_on_ones(_tensor_classes, (w,), jitted)


def test_plain_thunder_answers_the_proxys_class():
    with pytest.raises(AssertionError):
        run_on_ones(_tensor_classes, (torch.ones(2),), thunder.jit(_tensor_classes))


# (opaque_reads.py, Note [a container an opaque builtin reads])
SCALES = [2.0, 1.0]
NAMES = {"a": 2.0}


class Scaled(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.scales = [2.0, 1.0]

    def forward(self, x):
        return x.mul_(sum(self.scales))


_MODULE = Scaled()


def _set_scale(v):
    SCALES[0] = v


def _set_name(v):
    NAMES["a"] = v


def _set_module_scale(v):
    _MODULE.scales[0] = v


CONTAINERS = {
    "sum(global list)": (lambda x: x.mul_(sum(SCALES)), (), _set_scale),
    "max(global list)": (lambda x: x.mul_(max(SCALES)), (), _set_scale),
    "sorted(global list)[-1]": (lambda x: x.mul_(sorted(SCALES)[-1]), (), _set_scale),
    "itemgetter(0)(global list)": (lambda x: x.mul_(__import__("operator").itemgetter(0)(SCALES)), (), _set_scale),
    "sum(global dict values)": (lambda x: x.mul_(sum(NAMES.values())), (), _set_name),
    "sum(argument list)": (lambda x, s: x.mul_(sum(s)), None, None),
    "sum(self.scales)": (_MODULE, (), _set_module_scale),
}


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("case", list(CONTAINERS))
def test_a_container_an_opaque_builtin_reads_changed_between_calls(case, schedule):
    fn, extra, set_value = CONTAINERS[case]
    jitted = fusion_alias.jit(fn, backend="reference", schedule=schedule)
    if set_value is None:  # (the list given as an argument, a new one at each call)
        for v in (2.0, 3.0, 2.0):
            run_on_ones(fn, ([v, 1.0],), jitted)
        return
    run_with_values_set_between_calls(fn, extra, set_value, jitted)


def test_the_same_contents_reuse_the_program():
    fn = CONTAINERS["sum(global list)"][0]
    jitted = fusion_alias.jit(fn, backend="reference")
    for _ in range(3):
        run_on_ones(fn, (), jitted)
    assert (thunder.cache_hits(jitted), thunder.cache_misses(jitted)) == (2, 1)


def test_plain_thunder_is_wrong_on_a_sum_of_a_global_list():
    fn, extra, set_value = CONTAINERS["sum(global list)"]
    with pytest.raises(AssertionError):
        run_with_values_set_between_calls(fn, extra, set_value, thunder.jit(fn))
