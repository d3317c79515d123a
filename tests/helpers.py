import torch

import fusion_alias


def as_tuple(x):
    return x if isinstance(x, tuple) else (x,)


def run_both(fn, make_inputs, *, seed=0, **jit_kwargs):
    """Run ``fn`` eagerly and through fusion_alias on fresh copies with the same aliasing.

    Returns (jitted, outputs, eager outputs, base after jit, base after eager).
    """
    base = torch.randn(5, 5, generator=torch.Generator().manual_seed(seed))
    b_eager, b_jit = base.clone(), base.clone()
    args_eager, args_jit = make_inputs(b_eager), make_inputs(b_jit)
    expected = fn(*args_eager)
    jitted = jit_kwargs.pop("jitted", None) or fusion_alias.jit(fn, **jit_kwargs)
    got = jitted(*args_jit)
    return jitted, as_tuple(got), as_tuple(expected), (b_jit, args_jit), (b_eager, args_eager)


def assert_same(got, expected, state_jit, state_eager):
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        torch.testing.assert_close(g, e)
    torch.testing.assert_close(state_jit[0], state_eager[0])
    for a, b in zip(state_jit[1], state_eager[1]):
        if isinstance(a, torch.Tensor):
            torch.testing.assert_close(a, b)


def region_count(jitted) -> int:
    return len(fusion_alias.regions(jitted))
