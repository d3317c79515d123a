"""The seed programs of issue 2, with their region bounds, shared by tests and examples."""

import torch


def f(a, b):
    return a.exp_() * b.tanh_()


def g(a, _):
    b = a.view(5, 5)
    return a.exp_() * b.tanh_()


def h(a, _):
    b = a[0, 0]
    return a.exp_() * b.tanh_()


def k(a, b):
    t2 = a.exp_()
    b.tanh_()
    return t2.sin()


def scalar_view_then_exp(a, _):
    b = a[0, 0]
    c = a.exp_()
    b.tanh_()
    return c.sin()


def view_exp_tanh(a, _):
    b = a.view(5, 5)
    c = a.exp_()
    b.tanh_()
    return c.sin() * 2 * b


def two_views(a, _):
    b = a.view(5, 5)
    c = a.view(5, 5)
    b.tanh_()
    return c.sin() * 2 * b


def write_then_add(a, b):
    result = a.exp_() * b.tanh_()
    a.add_(1)
    return result, a


def tanh_pow4(a, _):
    a.tanh_()
    return a * a * a * a


def independent(a, b):
    return a.exp_() * b.tanh_()


def aliased_inputs(x):
    return (x, x[0, 0])


def independent_inputs(x):
    return (x, torch.randn(5, 5, generator=torch.Generator().manual_seed(1)))


# (program, input maker, max regions)
SEED_PROGRAMS = [
    (f, aliased_inputs, 3),
    (g, aliased_inputs, 1),
    (h, aliased_inputs, 3),
    (k, aliased_inputs, 3),
    (scalar_view_then_exp, aliased_inputs, 3),
    (view_exp_tanh, aliased_inputs, 1),
    (two_views, aliased_inputs, 1),
    (write_then_add, aliased_inputs, 4),
    (tanh_pow4, aliased_inputs, 1),
    (independent, independent_inputs, 1),
]
