"""Conjugate and negative views of an input (``x.conj()``, ``c.conj().imag``): the same memory and layout, read
conjugated or negated (guard.py, Note [conjugate and negative views in the key]). Session 17 hand probes: a
program compiled for ``f(x, x)`` was reused for ``f(x, x.conj())`` and read ``b`` as ``a``; ``a.copy_(a.conj())``
passed as two inputs was dropped as a copy onto itself; ``a.add_(a.conj()[0])`` was refused saying eager rejects
it, which it runs."""

import pytest
import torch

import fusion_alias
from fusion_alias.backends.reference import SCHEDULES
from fusion_alias.errors import AliasInputError


def _complex():
    return torch.complex(torch.tensor([1.0, 2.0, -0.5]), torch.tensor([3.0, 4.0, 0.25]))


def write_a_read_b(a, b):
    a.mul_(2)
    return b + 0


def copy_b_into_a(a, b):
    a.copy_(b)
    return a * 1


def _conj(x):
    return x.conj()


def _neg_imag(x):  # x.imag with x's conjugate: a float view of x's memory with the negative bit
    return x.conj().imag


def _imag(x):
    return x.imag


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_a_conjugate_view_of_the_same_memory_is_not_the_same_tensor(schedule):
    jitted = fusion_alias.jit(write_a_read_b, backend="reference", schedule=schedule)
    for second in (lambda x: x, _conj, lambda x: x, _conj):
        xe, xj = _complex(), _complex()
        want = write_a_read_b(xe, second(xe))
        got = jitted(xj, second(xj))
        torch.testing.assert_close(got, want)
        torch.testing.assert_close(xj, xe)


def test_a_copy_from_a_conjugate_view_of_the_destination_is_refused_not_dropped():
    # eager writes conj(a); it was dropped as a copy onto itself (a unchanged), then read through b
    jitted = fusion_alias.jit(copy_b_into_a, backend="reference")
    x = _complex()
    torch.testing.assert_close(jitted(x, x), _complex())
    with pytest.raises(AliasInputError, match="conjugate or negative view"):
        jitted(x, x.conj())


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_a_negative_view_of_the_same_memory_is_not_the_same_tensor(schedule):
    jitted = fusion_alias.jit(write_a_read_b, backend="reference", schedule=schedule)
    for second in (_imag, _neg_imag, _imag):
        xe, xj = _complex(), _complex()
        want = write_a_read_b(_imag(xe), second(xe))
        got = jitted(_imag(xj), second(xj))
        torch.testing.assert_close(got, want)
        torch.testing.assert_close(xj, xe)


def test_an_overlap_through_a_conjugate_view_is_refused_without_claiming_eager_rejects_it():
    def f(a, b):
        a.add_(b)
        return a

    x = _complex().repeat(3).reshape(3, 3)
    f(x.clone(), x.clone().conj()[0])  # (eager runs it on its own input: the check below is of the claim)
    xe = x.clone()
    f(xe, xe.conj()[0])  # eager runs it: it reads the conjugate view whole first
    with pytest.raises(AliasInputError, match="conjugate or negative view") as e:
        xj = x.clone()
        fusion_alias.jit(f, backend="reference")(xj, xj.conj()[0])
    assert "eager PyTorch rejects this too" not in str(e.value)
