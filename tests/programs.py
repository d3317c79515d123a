"""The seed programs of issue 2, with their region bounds, shared by tests and examples."""

import torch

# The programs themselves live in the package, shared with the benchmark and the demo.
from fusion_alias.bench.programs import (  # noqa: F401
    f,
    g,
    h,
    independent,
    k,
    scalar_view_then_exp,
    tanh_pow4,
    two_views,
    view_exp_tanh,
    write_then_add,
)


def aliased_inputs(x):
    return (x, x[0, 0])


def independent_inputs(x):
    return (x, torch.randn(5, 5, generator=torch.Generator().manual_seed(1)))


# (program, input maker, max regions)
SEED_PROGRAMS = [
    (f, aliased_inputs, 2),
    (g, aliased_inputs, 1),
    (h, aliased_inputs, 2),
    (k, aliased_inputs, 2),
    (scalar_view_then_exp, aliased_inputs, 2),
    (view_exp_tanh, aliased_inputs, 1),
    (two_views, aliased_inputs, 1),
    (write_then_add, aliased_inputs, 2),
    (tanh_pow4, aliased_inputs, 1),
    (independent, independent_inputs, 1),
]
