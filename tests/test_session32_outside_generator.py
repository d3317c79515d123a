"""Session 32: the ``modules`` generator's Python state outside the tensors that ``Net``'s forward branches on or calls
(an optional tensor attribute, a plain dict and list, a function, an enum member, a plain object's attributes),
changed between calls (fuzz/modules_outside.py, Note [Python state a module program branches on]; the class of
fusion_alias/outside_reads.py).

Without the new forms (``P_FORM`` 0) every stream is the one it was: the digests below are those of commit e48a912,
the one before the forms."""

import hashlib
import re
import warnings

import pytest

from fusion_alias.fuzz import modules_view_rebinds  # (session 45's forms)
from fusion_alias import fuzz
from fusion_alias.fuzz import (
    gen_modules, modules_code, modules_hook_dicts, modules_hooks, modules_outside, modules_process, modules_values,
    oracle, source,
)
from fusion_alias.fuzz.generator import generate_program

# (seed, programs, grad) -> sha1 of the rendered modules programs at commit e48a912 (without --special-values)
OLD_STREAMS = {
    (777, 10, False): "af9d0663489dbece2cbcfcf25b1bb556f4b9b33d",
    (32901, 12, False): "68cfc07fc3796a25f13e310a9fc5f998eab67162",
    (32902, 8, True): "3d20b821ef21fdb862e92e39c27fbe61fbddb2ab",
}

# what each form puts in __init__, reads in the forward, and changes between calls
_INIT = {"extra": r"self\.(extra = None|register_buffer\(\"extra\", None\))", "cache": r"self\.cache = \{\}",
         "hist": r"self\.hist = \[\]", "act": r"self\.act = torch\.relu", "mode": r"self\.mode = Mode\.A",
         "cfg": r"self\.cfg = Cfg\(\)"}
_READ = {"extra": "m.extra", "cache": "m.cache", "hist": "m.hist", "act": "m.act(", "mode": "m.mode", "cfg": "m.cfg"}


def _programs(seed, n, grad=False):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return [generate_program(seed, i, generators=("modules",), grad=grad) for i in range(n)]


def _forms(p) -> tuple[set, set, set]:
    """(forms in Net.__init__, forms the forward reads, forms changed between calls) of a program."""
    src = dict(p.tags)["module_src"]
    init = {f for f, pat in _INIT.items() if re.search(pat, src)}
    read = {f for f, r in _READ.items() if any(r in s.code for s in p.stmts)}
    changed = {f for f in modules_outside.FORMS for v in p.variants for st in v.state if f"m.{f}" in st}
    return init, read, changed


@pytest.fixture(autouse=True)
def _no_special_values(monkeypatch):
    monkeypatch.setattr(source, "SPECIAL_VALUES", False)


def test_forms_appear_over_seeds():
    ps = _programs(5, 40)
    init, read, changed = set(), set(), set()
    holding = 0
    for p in ps:
        i, r, c = _forms(p)
        init |= i
        read |= r
        changed |= c
        holding += bool(i)
        assert r <= i and c <= i, (p.name, i, r, c)  # nothing read or changed that Net does not define
        for s in p.stmts:  # the forward never stores into the containers (refused by design)
            assert not re.search(r"m\.(cache|hist)(\[[^]]*\])? *=|\.append\(|\.clear\(|\.pop\(", s.code), s.code
    assert init == set(modules_outside.FORMS), init
    assert read == set(modules_outside.FORMS), read
    assert len(changed) >= 5, changed
    assert 5 <= holding <= 25, holding  # rarely but regularly


@pytest.mark.parametrize("form", modules_outside.FORMS)
def test_each_form_renders_and_runs_eagerly(form, monkeypatch):
    """A program holding only ``form`` (drawn always) renders, and eager runs every call of it; ``Mode`` and ``Cfg``
    are defined in the program."""
    monkeypatch.setattr(modules_outside, "FORMS", (form,))
    monkeypatch.setattr(modules_outside, "P_FORM", 1.0)
    ps = _programs(32910, 4)
    assert all(_forms(p)[0] == {form} for p in ps)
    assert any(form in _forms(p)[1] for p in ps)
    assert any(form in _forms(p)[2] for p in ps)
    for p in ps:
        outcome = gen_modules._eager_calls(p)
        assert outcome is not None and outcome[0] == "ok", (p.name, outcome)
    report = fuzz.run_fuzz(seed=32910, only=[0, 1], system="eager", generators=("modules",), do_shrink=False)
    assert not report.failures and report.ok >= 1, report.summary()


def test_all_forms_together_render_and_run_eagerly(monkeypatch):
    monkeypatch.setattr(modules_outside, "P_FORM", 1.0)
    ps = _programs(32911, 3, grad=True)
    for p in ps:
        assert _forms(p)[0] == set(modules_outside.FORMS)
        assert gen_modules._eager_calls(p) is not None
    report = fuzz.run_fuzz(seed=32911, only=[0, 1, 2], system="eager", generators=("modules",), grad=True,
                           do_shrink=False)
    assert not report.failures, report.summary()


@pytest.mark.parametrize("case", list(OLD_STREAMS), ids=lambda c: f"{c[0]}-grad{c[2]}")
def test_streams_without_the_forms_are_the_ones_they_were(case, monkeypatch):
    """With P_FORM 0 no form is drawn and no program differs from commit e48a912's."""
    monkeypatch.setattr(modules_outside, "P_FORM", 0.0)
    monkeypatch.setattr(modules_hooks, "P_SUB", 0.0)  # (session 33's submodule form: modules_hooks.py)
    monkeypatch.setattr(modules_process, "P_PROC", 0.0)  # (and its process form: modules_process.py)
    monkeypatch.setattr(modules_code, "P_CODE", 0.0)  # (session 34's code form: test_session34_code_changes.py)
    monkeypatch.setattr(modules_values, "P_VALUES", 0.0)  # (session 35's forms: test_session35_module_forms.py)
    monkeypatch.setattr(modules_hook_dicts, "P_HOOK_DICTS", 0.0)
    monkeypatch.setattr(modules_view_rebinds, "P_VIEW_REBIND", 0.0)  # (session 45's form: test_session45_view_rebind_form.py)
    seed, n, grad = case
    h = hashlib.sha1()
    for p in _programs(seed, n, grad):
        h.update(oracle.program_source(p).encode())
    assert h.hexdigest() == OLD_STREAMS[case]


def test_fuzzer_runs_programs_of_the_class_against_fusion_alias():
    """seed 5 #5 (a list ``hist``) and #35 (a dict ``cache``): read in the forward, changed between calls; no wrong
    value, no missed rejection, no unexpected error."""
    for i, form in ((5, "hist"), (35, "cache")):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            p = generate_program(5, i, generators=("modules",))
        _, read, changed = _forms(p)
        assert form in read and form in changed, (i, read, changed)
    report = fuzz.run_fuzz(seed=5, only=[5, 35], schedules=("reads-first", "writes-first"), generators=("modules",),
                           do_shrink=False)
    msgs = "\n\n".join(f"{f.status} [{f.schedule}]\n{f.repro}\n{f.detail}" for f in report.failures)
    assert not report.failures, msgs
    assert not report.mismatches and not report.missed_rejections and not report.jit_errors
    assert report.ok >= 2, report.summary()
