"""Session 41: a class's dict copied by the interpreter, and a number a module reads through ``super()``.

``x.mul_(dict(vars(Cfg))["scale"])``, ``x.mul_({**vars(Cfg)}["scale"])`` and a module's ``x * super().factor`` kept
the first call's number after the class attribute changed, silently (plain ``thunder.jit`` too): the class's dict is
now recorded by its contents when Thunder's own code reads it opaquely (opaque_reads.py, Note [a class's dict the
interpreter copies]), and a module records the dicts of the classes ``super()`` looked in (super_reads.py, Note [a
number a module reads through super()]). Each call is compared with eager on fresh inputs (the written input too),
the value set between calls (2, 3, then 2 again), under both reference schedules.
"""

import pytest
import thunder
import torch

import fusion_alias
from tests.helpers import run_on_ones, run_with_values_set_between_calls

SCHEDULES = ["reads-first", "writes-first"]


class Cfg:
    scale = 2.0

    def method(self):
        return 1.0


def dict_of_class_dict(x):
    return x.mul_(dict(vars(Cfg))["scale"])


def unpacked_class_dict(x):
    return x.mul_({**vars(Cfg)}["scale"])


def unpacked_with_extra_key(x):
    d = {**vars(Cfg), "extra": 1.0}
    return x.mul_(d["scale"] + d["extra"])


def _set_scale(v):
    Cfg.scale = v


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("fn", [dict_of_class_dict, unpacked_class_dict, unpacked_with_extra_key],
                         ids=lambda f: f.__name__)
def test_class_dict_copied_by_the_interpreter(fn, schedule):
    jitted = fusion_alias.jit(fn, backend="reference", schedule=schedule)
    run_with_values_set_between_calls(fn, (), _set_scale, jitted)


def test_class_dict_copy_compiles_once_while_nothing_changes():
    """The record is a guard, not a recompilation at every call: three calls with the class unchanged, one program."""
    jitted = fusion_alias.jit(dict_of_class_dict, backend="reference")
    for _ in range(3):
        run_on_ones(dict_of_class_dict, (), jitted)
    assert thunder.cache_misses(jitted) == 1


class Scaled(torch.nn.Module):
    factor = 2.0


class Middle(Scaled):
    pass


class MyScaled(Middle):
    factor = 5.0

    def forward(self, x):
        return x.mul_(super().factor)


def _set_factor(v):
    Scaled.factor = v


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_module_super_number_changed_between_calls(schedule):
    module = MyScaled()
    jitted = fusion_alias.jit(module, backend="reference", schedule=schedule)
    run_with_values_set_between_calls(module, (), _set_factor, jitted)


def test_module_super_number_set_on_a_class_between():
    """``factor`` set on ``Middle``, between ``MyScaled`` and ``Scaled``: ``super().factor`` reads it from then on."""
    module = MyScaled()
    jitted = fusion_alias.jit(module, backend="reference")
    try:
        run_on_ones(module, (), jitted)
        Middle.factor = 7.0
        run_on_ones(module, (), jitted)
    finally:
        del Middle.factor


def test_module_own_class_attribute_is_not_what_super_reads():
    """``MyScaled.factor`` changed: ``super()`` skips ``MyScaled``, eager's number stays 2 and so does ours."""
    module = MyScaled()
    jitted = fusion_alias.jit(module, backend="reference")
    try:
        run_on_ones(module, (), jitted)
        MyScaled.factor = 9.0
        run_on_ones(module, (), jitted)
    finally:
        MyScaled.factor = 5.0


# a class's dict holding entries that compare otherwise (object_shapes.py, Note [a class's dict read whole]); a tensor
# in a class dict the interpreter copies is Thunder's to unpack, and it cannot (a NotImplementedError, plain thunder.jit
# too), so the copied dict holds containers only


class TensorHolder:
    scale: float = 2.0  # (an annotation: the class dict holds ``__annotations__``, a dict)
    table = {"a": 1}
    items = [1, 2]


class AnnotatedBase(torch.nn.Module):
    factor: float = 2.0
    const = torch.tensor(1.0)


class AnnotatedSub(AnnotatedBase):
    def forward(self, x):
        return x.mul_(super().factor)


def copied_dict_with_containers(x):
    return x.mul_(dict(vars(TensorHolder))["scale"])


def _set_holder_scale(v):
    TensorHolder.scale = v


def _set_annotated_factor(v):
    AnnotatedBase.factor = v


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_class_dict_with_containers_copied(schedule):
    jitted = fusion_alias.jit(copied_dict_with_containers, backend="reference", schedule=schedule)
    run_with_values_set_between_calls(copied_dict_with_containers, (), _set_holder_scale, jitted)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_module_super_number_beside_a_tensor_attribute(schedule):
    module = AnnotatedSub()
    jitted = fusion_alias.jit(module, backend="reference", schedule=schedule)
    run_with_values_set_between_calls(module, (), _set_annotated_factor, jitted)


def test_an_entry_compared_by_identity_replaced_compiles_again():
    """A list class attribute rebound (equal contents, another object): a new program, and the right number."""
    jitted = fusion_alias.jit(copied_dict_with_containers, backend="reference")
    original = TensorHolder.items
    try:
        run_on_ones(copied_dict_with_containers, (), jitted)
        TensorHolder.items = [1, 2]
        run_on_ones(copied_dict_with_containers, (), jitted)
        assert thunder.cache_misses(jitted) == 2
    finally:
        TensorHolder.items = original


class ScaleBase(torch.nn.Module):
    def scale(self):
        return 2.0


class ScaleSub(ScaleBase):
    def scale(self):
        return 7.0

    def forward(self, x):
        return x.mul_(super().scale())


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_module_method_called_through_super_replaced(schedule):
    """``Base.scale`` replaced between calls: ``super().scale()`` in a module's forward runs the new body (it kept the
    first one, silently; super_reads.py, Note [a number a module reads through super()])."""
    module = ScaleSub()
    jitted = fusion_alias.jit(module, backend="reference", schedule=schedule)
    original = ScaleBase.scale
    try:
        run_on_ones(module, (), jitted)
        ScaleBase.scale = lambda self: 3.0
        run_on_ones(module, (), jitted)
    finally:
        ScaleBase.scale = original


class DoubledLinear(torch.nn.Linear):
    def forward(self, x):
        return super().forward(x) * 2


def test_module_super_forward_of_a_torch_class_runs_right():
    """``super().forward(x)`` of an ``nn.Linear`` subclass: torch's method is a constant (no record, no cost a call),
    and the result is eager's, on calls made twice."""
    torch.manual_seed(0)
    module = DoubledLinear(4, 3)
    jitted = fusion_alias.jit(module, backend="reference")
    x = torch.randn(2, 4)
    with torch.no_grad():
        for _ in range(2):
            torch.testing.assert_close(jitted(x), module(x))
    assert thunder.cache_misses(jitted) == 1
