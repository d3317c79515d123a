"""Session 41: a property read through ``super()`` ran its getter natively, so what the getter read kept the first
call's value after it changed, silently (plain ``thunder.jit`` too): the getter is interpreted with the object now
(super_properties.py, Note [a property read through super()]). Compared with eager on fresh inputs (the written
input too), the value set between calls (2, 3, then 2 again), under both reference schedules.
"""

import pytest
import thunder
import torch

import fusion_alias
from tests.helpers import run_on_ones, run_with_values_set_between_calls

SCHEDULES = ["reads-first", "writes-first"]


class Base:
    _class_scale = 2.0

    def __init__(self):
        self._scale = 2.0

    @property
    def scale(self):
        return self._scale

    @property
    def class_scale(self):
        return self._class_scale


class Sub(Base):
    @property
    def scale(self):
        return 9.0

    @property
    def class_scale(self):
        return 9.0

    def get(self):
        return super().scale

    def get_class(self):
        return super().class_scale


obj = Sub()


def instance_attribute(x):
    return x.mul_(obj.get())


def class_attribute(x):
    return x.mul_(obj.get_class())


def _set_instance(v):
    obj._scale = v


def _set_class(v):
    Base._class_scale = v


class ModuleBase(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.factor = 2.0

    @property
    def scale(self):
        return self.factor


class ModuleSub(ModuleBase):
    @property
    def scale(self):
        return 9.0

    def forward(self, x):
        return x.mul_(super().scale)


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("fn, set_value", [(instance_attribute, _set_instance), (class_attribute, _set_class)],
                         ids=["instance", "class"])
def test_property_through_super_reads_what_it_reads_now(fn, set_value, schedule):
    jitted = fusion_alias.jit(fn, backend="reference", schedule=schedule)
    run_with_values_set_between_calls(fn, (), set_value, jitted)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_module_property_through_super(schedule):
    module = ModuleSub()
    jitted = fusion_alias.jit(module, backend="reference", schedule=schedule)

    def set_factor(v):
        module.factor = v

    run_with_values_set_between_calls(module, (), set_factor, jitted)


def test_property_replaced_on_the_base_compiles_again():
    jitted = fusion_alias.jit(instance_attribute, backend="reference")
    original = Base.scale
    try:
        run_on_ones(instance_attribute, (), jitted)
        Base.scale = property(lambda self: 4.0)
        run_on_ones(instance_attribute, (), jitted)
        assert thunder.cache_misses(jitted) == 2
    finally:
        Base.scale = original
