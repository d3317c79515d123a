"""Session 35: the ``modules`` generator's values of types Thunder's prologue does not check (fuzz/modules_values.py,
Note [values Thunder's prologue does not check, generated]) and hook dicts replaced on the module
(fuzz/modules_hook_dicts.py, Note [hook dicts replaced between calls, generated]): the classes of object_shapes.py's
Note [a value Thunder's prologue does not check] and module_tables.py's Note [a hook dict replaced on the module], in
the fuzzer."""

import warnings

import pytest

from fusion_alias.fuzz import modules_view_rebinds  # (session 45's forms)
from fusion_alias.fuzz import modules_code, modules_hook_dicts, modules_hooks, modules_process, modules_values, source
from fusion_alias.fuzz.generator import generate_program


@pytest.fixture
def _only_the_values_form(monkeypatch):
    monkeypatch.setattr(source, "SPECIAL_VALUES", False)
    monkeypatch.setattr(modules_hooks, "P_SUB", 0.0)
    monkeypatch.setattr(modules_process, "P_PROC", 0.0)
    monkeypatch.setattr(modules_code, "P_CODE", 0.0)
    monkeypatch.setattr(modules_values, "P_VALUES", 0.0)
    monkeypatch.setattr(modules_hook_dicts, "P_HOOK_DICTS", 0.0)


# (seed, programs, grad) -> sha1 of the rendered modules programs with the two forms at their defaults and the
# session 33-34 forms off (their tests pin them with these off)
FORM_STREAMS = {(35003, 30, False): "b37515d5cd85cbbded030c6239241d5b8dc0469a",
                (35004, 12, True): "6f20574821f9050bfd7761f7a695b1d78895e80b"}


def _module_programs(seed, n, grad=False):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return [generate_program(seed, i, generators=("modules",), grad=grad) for i in range(n)]


def test_the_values_form_is_drawn_read_and_changed(_only_the_values_form, monkeypatch):
    monkeypatch.setattr(modules_values, "P_VALUES", 0.3)
    ps = _module_programs(35003, 30)
    holding = [p for p in ps if "_FA_V = _FaValues()" in dict(p.tags)["module_src"]]
    assert 2 <= len(holding) <= 20, len(holding)
    assert all("self.fa_span = range(3)" in dict(p.tags)["module_src"] for p in holding)
    assert any(c in s.code for p in holding for s in p.stmts for c in ("_FA_V.", "_FA_SEEN", "m.fa_span"))
    changes = {st for p in holding for v in p.variants for st in v.state if st.startswith(("_FA_", "m.fa_span"))}
    assert changes, changes
    assert not any("_FA_" in s.code for p in ps if p not in holding for s in p.stmts)


def test_without_the_form_no_program_holds_it(_only_the_values_form, monkeypatch):
    monkeypatch.setattr(modules_values, "P_VALUES", 0.0)
    assert not any("_FaValues" in dict(p.tags)["module_src"] for p in _module_programs(35003, 30))


def test_the_fuzzer_runs_values_programs_against_fusion_alias(_only_the_values_form, monkeypatch):
    """Seed 35001 #5 and #7 with the form in every program: the two of its first 20 that mismatched on the code
    before the fix (574fbaf: ``_FA_SEEN.discard(1)``, ``_FA_V.kinds`` changed, the old program ran)."""
    from fusion_alias import fuzz

    monkeypatch.setattr(modules_values, "P_VALUES", 1.0)
    report = fuzz.run_fuzz(seed=35001, only=[5, 7], generators=("modules",), do_shrink=False)
    assert not report.failures, report.summary()
    assert report.ok >= 2, report.summary()


def test_the_hook_dict_form_is_drawn_and_changed(_only_the_values_form, monkeypatch):
    monkeypatch.setattr(modules_hook_dicts, "P_HOOK_DICTS", 0.3)
    ps = _module_programs(35003, 30)
    holding = [p for p in ps if "def _fa_times3(mod, args, out):" in dict(p.tags)["module_src"]]
    assert 2 <= len(holding) <= 20, len(holding)
    changes = {st for p in holding for v in p.variants for st in v.state if st.startswith("m._forward")}
    assert changes, changes
    assert not any(st.startswith("m._forward") for p in ps if p not in holding for v in p.variants for st in v.state)


def test_the_fuzzer_runs_hook_dict_programs_against_fusion_alias(monkeypatch):
    """Seed 35101 #4, #7 and #15 with the form in every program (the other forms as drawn, the values form off):
    the three of its first 20 that mismatched on the code before the fix (574fbaf: a hook dict set or cleared, the
    old hooks ran)."""
    from fusion_alias import fuzz

    monkeypatch.setattr(source, "SPECIAL_VALUES", False)
    monkeypatch.setattr(modules_values, "P_VALUES", 0.0)
    monkeypatch.setattr(modules_hook_dicts, "P_HOOK_DICTS", 1.0)
    report = fuzz.run_fuzz(seed=35101, only=[4, 7, 15], generators=("modules",), do_shrink=False)
    assert not report.failures, report.summary()
    assert report.ok >= 3, report.summary()


@pytest.mark.parametrize("case", list(FORM_STREAMS), ids=lambda c: f"{c[0]}-grad{c[2]}")
def test_the_form_streams_are_pinned(case, monkeypatch):
    import hashlib

    from fusion_alias.fuzz import oracle

    monkeypatch.setattr(source, "SPECIAL_VALUES", False)
    monkeypatch.setattr(modules_hooks, "P_SUB", 0.0)
    monkeypatch.setattr(modules_process, "P_PROC", 0.0)
    monkeypatch.setattr(modules_code, "P_CODE", 0.0)
    monkeypatch.setattr(modules_view_rebinds, "P_VIEW_REBIND", 0.0)  # (session 45's form: test_session45_view_rebind_form.py)
    h = hashlib.sha1()
    for p in _module_programs(*case):
        h.update(oracle.program_source(p).encode())
    assert h.hexdigest() == FORM_STREAMS[case]
    holding = [p for p in _module_programs(*case) if "_FaValues" in dict(p.tags)["module_src"]
               or "_fa_times3" in dict(p.tags)["module_src"]]
    assert holding  # (the pin covers the forms)
