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


def generated_programs(generators, seed, n, grad=False):
    """The fuzzer's programs ``0..n-1`` of ``seed`` (``generators`` None: the default mix), warnings silenced."""
    import warnings

    from fusion_alias import fuzz
    from fusion_alias.fuzz.generator import generate_program

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return [generate_program(seed, i, generators=generators or fuzz.GENERATORS, grad=grad) for i in range(n)]


def stream_digest(generators, seed, n, grad=False) -> str:
    """sha1 of the rendered programs of :func:`generated_programs`: what a test pins a fuzz stream by."""
    import hashlib

    from fusion_alias.fuzz import oracle

    h = hashlib.sha1()
    for p in generated_programs(generators, seed, n, grad):
        h.update(oracle.program_source(p).encode())
    return h.hexdigest()


def run_on_ones(fn, arguments, jitted):
    """``jitted(x, *arguments)`` against eager's ``fn(x, *arguments)`` on fresh ``ones(3)``: the output and the
    written ``x``."""
    xe, xj = torch.ones(3), torch.ones(3)
    torch.testing.assert_close(jitted(xj, *arguments), fn(xe, *arguments))
    torch.testing.assert_close(xj, xe)


def run_with_values_set_between_calls(fn, arguments, set_value, jitted):
    """:func:`run_on_ones` after ``set_value(v)`` for 2.0, then 3.0, then 2.0 again (the value the program reads
    set between calls); 2.0 restored at the end."""
    try:
        for v in (2.0, 3.0, 2.0):
            set_value(v)
            run_on_ones(fn, arguments, jitted)
    finally:
        set_value(2.0)
