"""Session 31: special values in the fuzzer's inputs (fuzz/source.py, Note [special values in the inputs]) and
what they found: the gradient of ``clamp`` at a NaN element (clamp_ties.py, Note [a NaN element: its value, no
gradient]; fuzz seed 31042 #0, ``--grad --special-values``).

Programs run eagerly and jitted (both reference schedules) on fresh copies of the same inputs; values and the
leaf's gradient are compared with NaN positions kept."""

import hashlib

import pytest
import torch

import fusion_alias

NAN, INF = float("nan"), float("inf")
SCHEDULES = ("reads-first", "writes-first")
DTYPES = (torch.float32, torch.float64, torch.float16, torch.bfloat16)

# (not hardtanh and relu6: eager's own gradient at NaN depends on the dtype and the length there, docs/limits.md)
CLAMPS = {
    "clamp_max": lambda a: a.clamp_max(-0.1) * 2,
    "clamp": lambda a: a.clamp(-1, 1) * 2,
    "clamp_min_": lambda a: (a * 1).clamp_min_(0.25) * 2,
    "clamp_tensor_max": lambda a: torch.clamp(a, max=torch.zeros(a.shape, dtype=a.dtype)) * 2,
    "clip": lambda a: a.clip(min=-0.5) * 2,
    "written_row": lambda a: (a[1:].clamp_(max=0.0), a * 3)[1],
}


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("name", list(CLAMPS))
def test_clamp_gradient_at_nan(name, dtype, schedule):
    fn = CLAMPS[name]
    got = []
    for f in (fn, fusion_alias.jit(fn, backend="reference", schedule=schedule)):
        leaf = torch.tensor([NAN, 1.0, -1.0, 0.25, INF, -INF, -0.1, 0.0], dtype=dtype).requires_grad_()
        x = leaf * 1
        y = f(x)
        y.float().sum().backward()
        got.append((y.detach().float(), leaf.grad.float()))
    (ey, eg), (jy, jg) = got
    assert torch.allclose(jy, ey, equal_nan=True), (ey, jy)
    assert torch.allclose(jg, eg, equal_nan=True), f"{name}: gradient eager {eg}, fusion_alias {jg}"


def _stream_digest(seed: int, n: int) -> str:
    from fusion_alias.fuzz import oracle
    from fusion_alias.fuzz.generator import generate_program

    h = hashlib.sha1()
    for i in range(n):
        h.update(oracle.program_source(generate_program(seed, i)).encode())
    return h.hexdigest()


def test_special_values_option_keeps_the_programs(monkeypatch):
    """``--special-values`` changes the inputs and some number operands, never the programs drawn without it
    (Note [special numbers keep the stream]); with it, the inputs hold NaN, infinities and extremes."""
    from fusion_alias.fuzz import oracle, source
    from fusion_alias.fuzz.generator import generate_program

    before = _stream_digest(20837, 12)
    monkeypatch.setattr(source, "SPECIAL_VALUES", True)
    specials = 0
    numbers = 0
    for i in range(40):
        p = generate_program(20837, i)
        ns = {}
        src = oracle.program_source(p)
        numbers += sum(src.count(s) for s in ("float('nan')", "float('inf')", "-0.0)"))
        exec(compile(src, f"program {i}", "exec"), ns)
        bases = ns["make_inputs"]()[0]
        for b in bases:
            if b.dtype.is_floating_point:
                specials += int((~torch.isfinite(b)).any())
            elif b.dtype != torch.bool and not b.dtype.is_complex:
                info = torch.iinfo(b.dtype)
                specials += int(((b == info.max) | (b == info.min)).any())
    assert specials > 20
    assert numbers > 0
    monkeypatch.setattr(source, "SPECIAL_VALUES", False)
    assert _stream_digest(20837, 12) == before
