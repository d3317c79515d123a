"""Session 40: numbers read through ``operator.attrgetter``, a class's whole dict, ``super()`` and ``{**D}``.

``x.mul_(operator.attrgetter("scale")(cfg))`` and ``x.mul_(vars(Cfg).copy()["scale"])`` kept the first call's value
after ``Cfg.scale`` changed, silently (plain ``thunder.jit`` too): the getter's read is now the path ``cfg.scale``
(opaque_reads.py, Note [an attribute read through attrgetter]) and a class's dict read whole is recorded by its
contents, methods by identity (object_shapes.py, Note [a class's dict read whole]). Each call is compared with eager
on fresh inputs (the written input too), the value set between calls (2, 3, then 2 again), under both reference
schedules; a getter replaced between calls compiles again.
"""

import operator

import pytest
import torch

import fusion_alias
from tests.helpers import run_on_ones, run_with_values_set_between_calls

SCHEDULES = ["reads-first", "writes-first"]


class Cfg:
    scale = 2.0

    def method(self):
        return 1.0


class Holder:
    pass


cfg = Cfg()
holder = Holder()
holder.inner = Holder()
holder.inner.v = 2.0
GETTER = operator.attrgetter("scale")


def global_getter(x):
    return x.mul_(GETTER(cfg))


def inline_getter(x):
    return x.mul_(operator.attrgetter("scale")(cfg))


def dotted_getter(x):
    return x.mul_(operator.attrgetter("inner.v")(holder))


def class_dict_copied(x):
    return x.mul_(vars(Cfg).copy()["scale"])


def class_dict_iterated(x):
    s = 0.0
    for k, v in vars(Cfg).items():
        if k == "scale":
            s = v
    return x.mul_(s)


def class_dict_values(x):
    return x.mul_(max(v for v in type(cfg).__dict__.values() if isinstance(v, float)))


def _set_scale(v):
    Cfg.scale = v


def _set_inner(v):
    holder.inner.v = v


CASES = [
    (global_getter, _set_scale), (inline_getter, _set_scale), (dotted_getter, _set_inner),
    (class_dict_copied, _set_scale), (class_dict_iterated, _set_scale), (class_dict_values, _set_scale),
]


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("fn, set_value", CASES, ids=[f.__name__ for f, _ in CASES])
def test_value_changed_between_calls(fn, set_value, schedule):
    jitted = fusion_alias.jit(fn, backend="reference", schedule=schedule)
    run_with_values_set_between_calls(fn, (), set_value, jitted)


def test_getter_replaced_between_calls():
    global GETTER
    Cfg.other = 5.0
    jitted = fusion_alias.jit(global_getter, backend="reference")
    try:
        run_on_ones(global_getter, (), jitted)
        GETTER = operator.attrgetter("other")
        run_on_ones(global_getter, (), jitted)
    finally:
        GETTER = operator.attrgetter("scale")
        del Cfg.other


def test_method_replaced_keeps_the_class_dict_guarded():
    """A class's dict read whole holds its methods by identity: replacing one compiles again (and the number read
    stays right)."""
    jitted = fusion_alias.jit(class_dict_copied, backend="reference")
    original = Cfg.method
    try:
        run_on_ones(class_dict_copied, (), jitted)
        Cfg.method = lambda self: 2.0
        run_on_ones(class_dict_copied, (), jitted)
        Cfg.scale = 3.0
        run_on_ones(class_dict_copied, (), jitted)
    finally:
        Cfg.method = original
        Cfg.scale = 2.0


# super().k (super_reads.py, Note [a number read through super()])


class Base:
    k = 2.0

    def scale(self):
        return 1.5


class Mid(Base):
    pass


class Derived(Mid):
    k = 3.0

    def get(self):
        return super().k

    @classmethod
    def class_get(cls):
        return super().k

    def scaled(self):
        return super().scale()


class Other(Mid):
    k = 4.0

    def get(self):
        return super().k


derived = Derived()


def super_number(x):
    return x.mul_(derived.get())


def super_number_classmethod(x):
    return x.mul_(Derived.class_get())


def super_method(x):
    return x.mul_(derived.scaled())


def _set_base_k(v):
    Base.k = v


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("fn", [super_number, super_number_classmethod], ids=lambda f: f.__name__)
def test_super_number_changed_between_calls(fn, schedule):
    jitted = fusion_alias.jit(fn, backend="reference", schedule=schedule)
    run_with_values_set_between_calls(fn, (), _set_base_k, jitted)


def test_super_number_set_on_a_class_between():
    """``k`` set on ``Mid``, between ``Derived`` and ``Base``: ``super().k`` reads it from then on."""
    jitted = fusion_alias.jit(super_number, backend="reference")
    try:
        run_on_ones(super_number, (), jitted)
        Mid.k = 7.0
        run_on_ones(super_number, (), jitted)
    finally:
        del Mid.k


def test_super_number_of_another_class():
    jitted = fusion_alias.jit(super_number, backend="reference")
    try:
        run_on_ones(super_number, (), jitted)
        derived.__class__ = Other
        Base.k = 6.0
        run_on_ones(super_number, (), jitted)
    finally:
        derived.__class__ = Derived
        Base.k = 2.0


def test_super_method_replaced():
    jitted = fusion_alias.jit(super_method, backend="reference")
    original = Base.scale
    try:
        run_on_ones(super_method, (), jitted)
        Base.scale = lambda self: 2.5
        run_on_ones(super_method, (), jitted)
    finally:
        Base.scale = original


# {**D} (dict_unpacking.py, Note [a dict unpacked into a new one])

NUMBERS = {"k": 2.0}
DEFAULTS = {"k": 2.0, "z": 1.0}
TENSORS = {"w": torch.full((3,), 2.0)}


def unpacked(x):
    return x.mul_({**NUMBERS}["k"])


def unpacked_with_more(x):
    return x.mul_({**NUMBERS, "z": 1}["k"])


def _options(x, **kw):
    opts = {**DEFAULTS, **kw}
    return x.mul_(opts["k"] * opts["z"])


def unpacked_defaults(x):
    return _options(x, z=2.0)


def unpacked_tensor(x):
    return x.mul_({**TENSORS}["w"])


def _set_numbers(v):
    NUMBERS["k"] = v


def _set_defaults(v):
    DEFAULTS["k"] = v


def _set_tensor(v):
    TENSORS["w"].fill_(v)


UNPACKED = [(unpacked, _set_numbers), (unpacked_with_more, _set_numbers), (unpacked_defaults, _set_defaults),
            (unpacked_tensor, _set_tensor)]


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("fn, set_value", UNPACKED, ids=[f.__name__ for f, _ in UNPACKED])
def test_unpacked_dict_changed_between_calls(fn, set_value, schedule):
    jitted = fusion_alias.jit(fn, backend="reference", schedule=schedule)
    run_with_values_set_between_calls(fn, (), set_value, jitted)
