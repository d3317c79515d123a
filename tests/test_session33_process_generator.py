"""Session 33: the ``modules`` generator's process-setting form (fuzz/modules_process.py, Note [a process setting the
forward branches on, changed between calls]): ``Net``'s forward branches on ``os.environ`` / ``os.getenv`` and
``torch.are_deterministic_algorithms_enabled()``, and the statements between calls change them; the class of
fusion_alias/process_state.py (Note [a process setting read inside the function]).

With ``P_PROC`` 0 every stream is the one it was (the digests of tests/test_session32_generators.py,
tests/test_session32_outside_generator.py and tests/test_session33_trust.py, which set it so). The oracle runs each
program from the process's defaults and gives the process back as it found it (``modules_process.isolated``)."""

import hashlib
import os
import warnings

import pytest
import torch

from fusion_alias.fuzz import modules_view_rebinds  # (session 45's forms)
from fusion_alias import fuzz
from fusion_alias.fuzz import modules_code, modules_hook_dicts, modules_process, modules_values, oracle, source
from fusion_alias.fuzz.generator import generate_program

# (seed, programs, grad) -> sha1 of the rendered modules programs with the form at its default probability
# (and session 32's and 33's other forms at theirs)
PROC_STREAMS = {
    (33021, 40, False): "5f608aef85a1817433a59d1d2cbb189a0bd46544",  # (3 programs hold the form)
    (33024, 20, True): "f9b6972c907e704da4a8c92352887d8819bf1cad",  # (3)
}
_READS = ("os.environ", "os.getenv", "torch.are_deterministic_algorithms_enabled()")


def _programs(seed, n, grad=False):
    with warnings.catch_warnings(), modules_process.isolated():
        warnings.simplefilter("ignore")
        return [generate_program(seed, i, generators=("modules",), grad=grad) for i in range(n)]


def _process_state():
    return ({k: os.environ.get(k) for k in modules_process.VARS}, torch.are_deterministic_algorithms_enabled())


@pytest.fixture(autouse=True)
def _no_special_values(monkeypatch):
    monkeypatch.setattr(source, "SPECIAL_VALUES", False)
    monkeypatch.setattr(modules_code, "P_CODE", 0.0)  # (session 34's code form: test_session34_code_changes.py)
    monkeypatch.setattr(modules_values, "P_VALUES", 0.0)  # (session 35's forms: test_session35_module_forms.py)
    monkeypatch.setattr(modules_hook_dicts, "P_HOOK_DICTS", 0.0)
    monkeypatch.setattr(modules_process, "P_BACKEND", 0.0)  # (session 34's backend flags: test_session34_backend_generator.py)
    monkeypatch.setattr(modules_view_rebinds, "P_VIEW_REBIND", 0.0)  # (session 45's form: test_session45_view_rebind_form.py)


@pytest.mark.parametrize("case", list(PROC_STREAMS), ids=lambda c: f"{c[0]}-grad{c[2]}")
def test_the_process_stream_is_pinned(case):
    h = hashlib.sha1()
    for p in _programs(*case):
        h.update(oracle.program_source(p).encode())
    assert h.hexdigest() == PROC_STREAMS[case]


def test_the_process_form_is_drawn_read_and_changed():
    ps = _programs(33021, 40)
    holding = [p for p in ps if "import os" in dict(p.tags)["module_src"]]
    assert 1 <= len(holding) <= 10, len(holding)
    assert any(r in s.code for p in holding for s in p.stmts for r in _READS)
    changes = {st for p in holding for v in p.variants for st in v.state if "os.environ" in st or "determin" in st}
    assert changes
    assert not any(r in s.code for p in ps if p not in holding for s in p.stmts for r in _READS)


def test_every_form_renders_and_the_process_is_given_back(monkeypatch):
    """With the form in every program: each reading and each change appears, and neither drawing (the generator's
    eager runs) nor the oracle leaves a setting changed."""
    monkeypatch.setattr(modules_process, "P_PROC", 1.0)
    before = _process_state()
    ps = _programs(33023, 12)
    codes = " ".join(s.code for p in ps for s in p.stmts)
    for r in ('os.environ.get("FUSION_ALIAS_FUZZ_FLAG", "0") == "1"', 'int(os.getenv("FUSION_ALIAS_FUZZ_SCALE", "1"))',
              '"FUSION_ALIAS_FUZZ_FLAG" in os.environ', "torch.are_deterministic_algorithms_enabled()"):
        assert r in codes, r
    assert _process_state() == before
    for p in ps[:2]:
        oracle.run_program(p, "reads-first", system="eager")
        assert _process_state() == before


def test_a_run_starts_from_the_defaults_and_restores_the_process(monkeypatch):
    monkeypatch.setenv("FUSION_ALIAS_FUZZ_FLAG", "1")
    monkeypatch.delenv("FUSION_ALIAS_FUZZ_SCALE", raising=False)
    try:
        torch.use_deterministic_algorithms(True, warn_only=True)
        with modules_process.isolated():
            assert _process_state() == ({k: None for k in modules_process.VARS}, False)
            os.environ["FUSION_ALIAS_FUZZ_SCALE"] = "3"
            torch.use_deterministic_algorithms(True)
        assert _process_state() == ({"FUSION_ALIAS_FUZZ_FLAG": "1", "FUSION_ALIAS_FUZZ_SCALE": None}, True)
        assert torch.is_deterministic_algorithms_warn_only_enabled()
    finally:
        torch.use_deterministic_algorithms(False)


def test_the_fuzzer_runs_process_programs_against_fusion_alias(monkeypatch):
    """Seed 33020 #8, #21, #23 with the form and without the submodule one: the three of its first 30 that mismatched
    on the code before process_state.py (e5ef96a; a read of torch.are_deterministic_algorithms_enabled() kept its
    first answer). No wrong value, no missed rejection, no unexpected error; the process given back."""
    from fusion_alias.fuzz import modules_hooks

    monkeypatch.setattr(modules_process, "P_PROC", 1.0)
    monkeypatch.setattr(modules_hooks, "P_SUB", 0.0)
    before = _process_state()
    report = fuzz.run_fuzz(seed=33020, only=[8, 21, 23], generators=("modules",), do_shrink=False)
    assert not report.failures, report.summary()
    assert not report.mismatches and report.ok >= 2, report.summary()
    assert _process_state() == before
