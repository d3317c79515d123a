"""Session 38 (helper): what a program asks of an object's class: ``isinstance(o, A)``, ``type(o) is A``,
``issubclass(type(o), A)``, ``type(o).__name__`` with an object of another class between calls
(object_shapes.py, Note [an object's class]), and a class attribute read through ``type(o)`` (``type(o).k``,
``type(self).k`` in a module's ``forward``) set between calls (type_reads.py, Note [a class reached through
type()]), and a module's class asked by ``isinstance(m, nn.ReLU)`` or ``type(m) is nn.ReLU`` of a module argument or
a global module (type_reads.py, Note [the class an isinstance asks about]). Each ran the first call's answer again,
silently (plain ``thunder.jit`` too); and ``type(x) is torch.Tensor`` of a tensor was False from the first call
(type_reads.py, Note [the type of a tensor]). Each test calls with the first value, the changed one, then the first
again, against eager on fresh inputs each call, the written input too, under both reference schedules.
"""

import pytest
import thunder
import torch

import fusion_alias
from helpers import run_on_ones, run_with_values_set_between_calls

SCHEDULES = ["reads-first", "writes-first"]


class A:
    k = 2.0


class B:
    k = 3.0


class SubA(A):
    pass


def branch_isinstance(x, o):
    return x.mul_(2.0) if isinstance(o, A) else x.mul_(3.0)


def branch_type_is(x, o):
    return x.mul_(2.0) if type(o) is A else x.mul_(3.0)


def branch_issubclass(x, o):
    return x.mul_(2.0) if issubclass(type(o), A) else x.mul_(3.0)


def branch_type_name(x, o):
    return x.mul_(2.0) if type(o).__name__ == "A" else x.mul_(3.0)


def class_attribute(x, o):
    return x.mul_(type(o).k)


class Holder:
    def __init__(self, o):
        self.o = o


def attribute_isinstance(x, h):
    return x.mul_(2.0) if isinstance(h.o, A) else x.mul_(3.0)


G = {"o": A()}


def global_isinstance(x):
    return x.mul_(2.0) if isinstance(G["o"], A) else x.mul_(3.0)


def list_isinstance(x, objs):
    return x.mul_(2.0) if isinstance(objs[0], A) else x.mul_(3.0)


# name -> (function, its extra arguments for each call: A, B, A, a subclass of A)
CALLS = {
    "isinstance": (branch_isinstance, lambda o: (o,)),
    "type-is": (branch_type_is, lambda o: (o,)),
    "issubclass": (branch_issubclass, lambda o: (o,)),
    "type-name": (branch_type_name, lambda o: (o,)),
    "type-attribute": (class_attribute, lambda o: (o,)),
    "attribute-object": (attribute_isinstance, lambda o: (Holder(o),)),
    "list-entry": (list_isinstance, lambda o: ([o],)),
}


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("case", list(CALLS))
def test_an_object_of_another_class(case, schedule):
    fn, arguments = CALLS[case]
    jitted = fusion_alias.jit(fn, backend="reference", schedule=schedule)
    for o in (A(), B(), A(), SubA()):
        run_on_ones(fn, arguments(o), jitted)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_a_global_object_of_another_class(schedule):
    jitted = fusion_alias.jit(global_isinstance, backend="reference", schedule=schedule)
    try:
        for o in (A(), B(), A()):
            G["o"] = o
            run_on_ones(global_isinstance, (), jitted)
    finally:
        G["o"] = A()


class Cfg:
    k = 2.0


class SubCfg(Cfg):
    pass


class Scaled(torch.nn.Module):
    k = 2.0

    def forward(self, x):
        return x.mul_(type(self).k)


def via_getattr(x, o):
    return x.mul_(getattr(type(o), "k"))


_OBJ, _SUB = Cfg(), SubCfg()
_MODULE = Scaled()

# name -> (function, extra arguments, setter of the number)
ATTRIBUTES = {
    "type(o).k": (class_attribute, (_OBJ,), lambda v: setattr(Cfg, "k", v)),
    "inherited": (class_attribute, (_SUB,), lambda v: setattr(Cfg, "k", v)),
    "getattr(type(o))": (via_getattr, (_OBJ,), lambda v: setattr(Cfg, "k", v)),
    "type(self).k": (_MODULE, (), lambda v: setattr(Scaled, "k", v)),
    "type(module argument).k": (lambda x, m: x.mul_(type(m).k), (_MODULE,), lambda v: setattr(Scaled, "k", v)),
}


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("case", list(ATTRIBUTES))
def test_a_class_attribute_read_through_type_set_between_calls(case, schedule):
    fn, extra, set_value = ATTRIBUTES[case]
    run_with_values_set_between_calls(fn, extra, set_value, fusion_alias.jit(fn, backend="reference", schedule=schedule))


@pytest.mark.parametrize("case", ["isinstance", "type-attribute"])
def test_plain_thunder_is_wrong_there(case):
    fn, arguments = CALLS[case]
    jitted = thunder.jit(fn)
    with pytest.raises(AssertionError):
        for o in (A(), B()):
            run_on_ones(fn, arguments(o), jitted)


def test_the_same_class_reuses_the_program():
    jitted = fusion_alias.jit(class_attribute, backend="reference")
    for _ in range(3):
        run_on_ones(class_attribute, (A(),), jitted)
    assert (thunder.cache_hits(jitted), thunder.cache_misses(jitted)) == (2, 1)


def module_isinstance(x, m):
    return x.mul_(2.0) if isinstance(m, torch.nn.ReLU) else x.mul_(3.0)


def module_type_is(x, m):
    return x.mul_(2.0) if type(m) is torch.nn.ReLU else x.mul_(3.0)


MODULES = {"m": torch.nn.ReLU()}


def global_module_isinstance(x):
    return x.mul_(2.0) if isinstance(MODULES["m"], torch.nn.ReLU) else x.mul_(3.0)


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("fn", [module_isinstance, module_type_is])
def test_a_module_argument_of_another_class(fn, schedule):  # (type_reads.py, Note [the class an isinstance asks about])
    jitted = fusion_alias.jit(fn, backend="reference", schedule=schedule)
    for m in (torch.nn.ReLU(), torch.nn.Tanh(), torch.nn.ReLU(), torch.nn.ReLU6()):
        run_on_ones(fn, (m,), jitted)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_a_global_module_of_another_class(schedule):
    jitted = fusion_alias.jit(global_module_isinstance, backend="reference", schedule=schedule)
    try:
        for m in (torch.nn.ReLU(), torch.nn.Tanh(), torch.nn.ReLU()):
            MODULES["m"] = m
            run_on_ones(global_module_isinstance, (), jitted)
    finally:
        MODULES["m"] = torch.nn.ReLU()


def test_modules_of_one_class_reuse_the_program():
    jitted = fusion_alias.jit(module_isinstance, backend="reference")
    for _ in range(3):
        run_on_ones(module_isinstance, (torch.nn.ReLU(),), jitted)
    assert (thunder.cache_hits(jitted), thunder.cache_misses(jitted)) == (2, 1)


def test_isinstance_of_a_tensor_and_a_parameter_still_answers_for_the_tensor():
    def f(x, w):
        a = 2.0 if isinstance(x, torch.Tensor) and not isinstance(x, torch.nn.Parameter) else 3.0
        return x.mul_(a * (5.0 if isinstance(w, torch.nn.Parameter) else 7.0))

    w = torch.nn.Parameter(torch.ones(2))
    jitted = fusion_alias.jit(f, backend="reference")
    for _ in range(2):
        run_on_ones(f, (w,), jitted)


def _tensor_branches(x, w):
    a = 2.0 if type(x) is torch.Tensor else 3.0
    b = 5.0 if type(w) is torch.nn.Parameter else 7.0
    c = 11.0 if type(x).__name__ == "Tensor" and isinstance(x, torch.Tensor) else 13.0
    return x.mul_(a * b * c).add_(x * 2)  # (the operators still find the proxy's methods)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_the_type_of_a_tensor_and_a_parameter(schedule):  # (type_reads.py, Note [the type of a tensor])
    w = torch.nn.Parameter(torch.ones(2))
    jitted = fusion_alias.jit(_tensor_branches, backend="reference", schedule=schedule)
    for _ in range(2):
        run_on_ones(_tensor_branches, (w,), jitted)


def test_plain_thunder_answers_the_proxys_type():
    w = torch.nn.Parameter(torch.ones(2))
    with pytest.raises(AssertionError):
        run_on_ones(_tensor_branches, (w,), thunder.jit(_tensor_branches))


class Called:
    k = 2.0

    def __call__(self, x):
        return x * self.k


def branch_callable(x, o):
    return x.mul_(2.0) if callable(o) else x.mul_(3.0)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_a_callable_object_then_a_plain_one_again(schedule):  # (object_shapes.py, Note [an object's class])
    jitted = fusion_alias.jit(branch_callable, backend="reference", schedule=schedule)
    for o in (A(), Called(), A(), Called()):
        run_on_ones(branch_callable, (o,), jitted)


class Flags:
    pass


class SubFlags(Flags):
    pass


def _set_flags(on):
    if on:
        Flags.flag, Flags.k = 1, 7.0
    else:
        for name in ("flag", "k"):
            if name in vars(Flags):
                delattr(Flags, name)


# (object_shapes.py, Note [a class's attribute names])
FLAG_READS = {
    "hasattr(global class)": (lambda x: x.mul_(2.0) if hasattr(Flags, "flag") else x.mul_(3.0), ()),
    "getattr(global class, default)": (lambda x: x.mul_(getattr(Flags, "k", 2.0)), ()),
    "hasattr(type(o))": (lambda x, o: x.mul_(2.0) if hasattr(type(o), "flag") else x.mul_(3.0), (SubFlags(),)),
    "getattr(subclass, default)": (lambda x: x.mul_(getattr(SubFlags, "k", 5.0)), ()),
}


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("case", list(FLAG_READS))
def test_a_class_attribute_added_or_removed_between_calls(case, schedule):
    fn, extra = FLAG_READS[case]
    jitted = fusion_alias.jit(fn, backend="reference", schedule=schedule)
    try:
        for on in (False, True, False, True):
            _set_flags(on)
            run_on_ones(fn, extra, jitted)
    finally:
        _set_flags(False)
