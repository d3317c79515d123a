"""Session 34: the ``modules`` generator's process form sometimes reads and sets a ``torch.backends`` flag in
deterministic mode's places (fuzz/modules_process.py, Note [a backend flag in the deterministic-mode places]): the
class of process_state.py's Note [backend flags read through torch._C].

With ``P_BACKEND`` 0 every stream is session 33's (tests/test_session33_process_generator.py pins them so). With the
form in every program (``P_PROC`` 1, ``P_BACKEND`` 1, ``P_SUB`` 0), seed 34020's first 30 programs gave 4 mismatches
on the code before the fix (b6e9b87: #4 ``cudnn.conv.fp32_precision``, #5 and #22 ``cuda.matmul.allow_tf32``, #12
``cuda.flash_sdp_enabled()``), none after."""

import hashlib
import warnings

import pytest

from fusion_alias.fuzz import modules_view_rebinds  # (session 45's forms)
from fusion_alias import fuzz
from fusion_alias.fuzz import (
    modules_code, modules_hook_dicts, modules_hooks, modules_process, modules_values, oracle, source,
)
from fusion_alias.fuzz.generator import generate_program

# (seed, programs, grad) -> sha1 of the rendered modules programs, session 33's forms and this one at their default
# probabilities (the code form off)
BACKEND_STREAMS = {
    (34021, 40, False): "a1076714175ab84fbac162af73f37c97d24b1e98",  # (3 programs hold the process form, 1 a flag)
    (34026, 20, True): "a6dac867eaf709ec626406ee5f5407ebf313eac2",  # (2, 2)
}


def _flags():
    return {name: modules_process._flag(name) for name in modules_process.BACKEND_FLAGS}


def _programs(seed, n, grad=False):
    with warnings.catch_warnings(), modules_process.isolated():
        warnings.simplefilter("ignore")
        return [generate_program(seed, i, generators=("modules",), grad=grad) for i in range(n)]


@pytest.fixture(autouse=True)
def _no_special_values(monkeypatch):
    monkeypatch.setattr(source, "SPECIAL_VALUES", False)
    monkeypatch.setattr(modules_code, "P_CODE", 0.0)  # (session 34's code form: test_session34_code_changes.py)
    monkeypatch.setattr(modules_values, "P_VALUES", 0.0)  # (session 35's forms: test_session35_module_forms.py)
    monkeypatch.setattr(modules_hook_dicts, "P_HOOK_DICTS", 0.0)
    monkeypatch.setattr(modules_view_rebinds, "P_VIEW_REBIND", 0.0)  # (session 45's form: test_session45_view_rebind_form.py)


@pytest.mark.parametrize("case", list(BACKEND_STREAMS), ids=lambda c: f"{c[0]}-grad{c[2]}")
def test_the_backend_stream_is_pinned(case):
    h = hashlib.sha1()
    for p in _programs(*case):
        h.update(oracle.program_source(p).encode())
    assert h.hexdigest() == BACKEND_STREAMS[case]


def test_every_flag_is_read_and_set_and_given_back(monkeypatch):
    monkeypatch.setattr(modules_process, "P_PROC", 1.0)
    monkeypatch.setattr(modules_process, "P_BACKEND", 1.0)
    monkeypatch.setattr(modules_hooks, "P_SUB", 0.0)
    before = _flags()
    ps = _programs(34022, 16)
    sources = [oracle.program_source(p) for p in ps]
    for name, (read, setter, default, other) in modules_process.BACKEND_FLAGS.items():
        holding = [p for p, src in zip(ps, sources) if read in src]
        assert holding, name
        assert setter.format(repr(default)) in oracle.program_source(holding[0])  # (its prelude)
    assert not any("are_deterministic_algorithms_enabled" in s for s in sources)
    states = " ".join(st for p in ps for v in p.variants for st in v.state)
    assert any(setter.format(repr(other)) in states for _, setter, _, other in modules_process.BACKEND_FLAGS.values())
    assert _flags() == before
    for p in ps[:2]:
        oracle.run_program(p, "reads-first", system="eager")
        assert _flags() == before


def test_isolated_starts_from_the_defaults_and_restores_the_flags():
    before = _flags()
    try:
        for name, (_, _, default, other) in modules_process.BACKEND_FLAGS.items():
            modules_process._set_flag(name, other)
        with modules_process.isolated():
            assert _flags() == {n: v[2] for n, v in modules_process.BACKEND_FLAGS.items()}
            modules_process._set_flag("allow_tf32", True)
        assert _flags() == {n: v[3] for n, v in modules_process.BACKEND_FLAGS.items()}
    finally:
        for name, value in before.items():
            modules_process._set_flag(name, value)


def test_the_fuzzer_runs_backend_programs_against_fusion_alias(monkeypatch):
    """Seed 34020 #4, #5, #12, #22 with the form in every program: the four of its first 30 that mismatched on the
    code before the fix (b6e9b87). No wrong value, no missed rejection, no unexpected error; the flags given back."""
    monkeypatch.setattr(modules_process, "P_PROC", 1.0)
    monkeypatch.setattr(modules_process, "P_BACKEND", 1.0)
    monkeypatch.setattr(modules_hooks, "P_SUB", 0.0)
    before = _flags()
    report = fuzz.run_fuzz(seed=34020, only=[4, 5, 12, 22], generators=("modules",), do_shrink=False)
    assert not report.failures, report.summary()
    assert not report.mismatches and report.ok >= 3, report.summary()
    assert _flags() == before
