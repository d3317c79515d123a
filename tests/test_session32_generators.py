"""Session 32: the fuzzer's generators with ``--special-values`` (fuzz/source.py, Note [special values in the inputs])
reach three places they did not: the ``modules`` generator's parameters and buffers and its number operands
(gen_modules.py, Note [special values in the module's state]), and the ``dtype`` generator's literal numbers,
special and past the dtype's range (dtype_spellings.py, Note [special and huge numbers in dtype programs]).

Without the option every stream is the one it was: the digests below are those of the streams before session 32."""

import hashlib
import random
import re
import warnings

import pytest
import torch

from fusion_alias.fuzz import modules_view_rebinds  # (session 45's forms)
from fusion_alias.fuzz import dtype_rule_stmts  # (session 46's pow spellings)
from fusion_alias.fuzz import (
    dtype_rule_stmts, dtype_spellings, modules_code, modules_hook_dicts, modules_hooks, modules_process,
    modules_values, oracle, source,
)
from fusion_alias.fuzz.generator import generate_program

# (generators, grad, seed, programs) -> sha1 of the rendered programs, as drawn before session 32 (commit 2b76b93);
# the modules ones with the Python state of fuzz/modules_outside.py (session 32; without it they are the ones of
# 2b76b93: tests/test_session32_outside_generator.py) and without session 33's submodule form (``P_SUB`` 0:
# fuzz/modules_hooks.py; the stream with it is pinned in tests/test_session33_trust.py)
STREAMS = {
    (("modules",), False, 777, 10): "e088eff8210eab7261603163375775f2288fdc64",
    (("modules",), True, 778, 8): "1b8bbf4c0bf53136865646923742560e328dcb55",
    (("dtype",), False, 779, 25): "401aa63e03d421ab0e1ee17bdc0d05a07a745275",
    (("dtype",), True, 780, 10): "9095aa1b1c761192b2bd0df43bce0c52611d824a",
}


def _digest(generators, grad, seed, n) -> str:
    h = hashlib.sha1()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for i in range(n):
            h.update(oracle.program_source(generate_program(seed, i, generators=generators, grad=grad)).encode())
    return h.hexdigest()


@pytest.mark.parametrize("case", list(STREAMS), ids=lambda c: f"{c[0][0]}-grad{c[1]}-{c[2]}")
def test_streams_without_special_values_are_the_ones_they_were(case, monkeypatch):
    """Without --special-values no new stream is drawn from (a special number asked for fails the test) and every
    program is the one it was; turning the option on and off again leaves no trace."""
    monkeypatch.setattr(source, "SPECIAL_VALUES", False)
    monkeypatch.setattr(modules_hooks, "P_SUB", 0.0)  # (session 33's submodule form: test_session33_trust.py)
    monkeypatch.setattr(modules_process, "P_PROC", 0.0)  # (and its process form: test_session33_process_generator.py)
    monkeypatch.setattr(dtype_spellings, "P_REDUCTION_DTYPE", 0.0)  # (session 34's dtype= reductions: test_session34_reduction_dtypes.py)
    monkeypatch.setattr(modules_code, "P_CODE", 0.0)  # (session 34's code form: test_session34_code_changes.py)
    monkeypatch.setattr(modules_values, "P_VALUES", 0.0)  # (session 35's forms: test_session35_module_forms.py)
    monkeypatch.setattr(modules_hook_dicts, "P_HOOK_DICTS", 0.0)
    monkeypatch.setattr(dtype_spellings, "P_SCAN_DTYPE", 0.0)  # (session 35's in-place scans: test_session35_generators.py)
    monkeypatch.setattr(modules_view_rebinds, "P_VIEW_REBIND", 0.0)  # (session 45's form: test_session45_view_rebind_form.py)
    monkeypatch.setattr(dtype_rule_stmts, "P_POW_SPELLING", 0.0)  # (session 46's pow spellings: test_session46_fuzz.py)

    def no_special(*a, **k):
        raise AssertionError("a special number drawn without --special-values")

    with monkeypatch.context() as m:
        m.setattr(dtype_spellings, "special_number", no_special)
        assert _digest(*case) == STREAMS[case]
    generators, grad, seed, _ = case
    monkeypatch.setattr(source, "SPECIAL_VALUES", True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with_special = [oracle.program_source(generate_program(seed, i, generators=generators, grad=grad)) for i in range(2)]
    assert any("special(" in src for src in with_special)
    monkeypatch.setattr(source, "SPECIAL_VALUES", False)
    assert _digest(*case) == STREAMS[case]


def _module_state_values(seed: int, n: int) -> list[tuple[str, dict[str, torch.Tensor]]]:
    """(the module's source, name -> tensor of its state as built) of modules programs ``0..n-1`` of ``seed``."""
    out = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for i in range(n):
            p = generate_program(seed, i, generators=("modules",))
            ns: dict = {}
            src = oracle.program_source(p, "eager")
            exec(compile(src, f"modules program {i}", "exec"), ns)
            m = ns["make_module"]()
            out.append((dict(p.tags)["module_src"], ns["module_state"](m)))
    return out


def _special(t: torch.Tensor) -> bool:
    if t.dtype.is_floating_point:
        return bool((~torch.isfinite(t)).any() | (t.abs() == 1e5).any())
    info = torch.iinfo(t.dtype)
    return bool(((t == info.max) | (t == info.min) | (t == -1)).any())


def test_modules_parameters_and_buffers_hold_special_values(monkeypatch):
    """With --special-values the module's constructor passes its flat tensor (the parameters w and b and the buffer u
    are views of it), every buffer and ``scale`` through special(); without it, none."""
    monkeypatch.setattr(source, "SPECIAL_VALUES", True)
    programs = _module_state_values(32032, 8)
    names = {"w": 0, "b": 0, "buffers": 0}
    for src, state in programs:
        assert "flat = special(torch.rand(" in src
        assert "def special(t):" in src
        for b in ("ema", "mom", "run_mean", "run_var", "steps", "kv"):
            if f'"{b}"' in src:
                assert f'self.register_buffer("{b}", special(' in src, (b, src)
                names["buffers"] += _special(state[b])
        names["w"] += _special(state["w"])
        names["b"] += _special(state["b"])
    assert names["w"] >= 6 and names["b"] >= 1 and names["buffers"] >= 6, names
    monkeypatch.setattr(source, "SPECIAL_VALUES", False)
    for src, state in _module_state_values(32032, 4):
        assert "special(" not in src
        assert not any(_special(t) for k, t in state.items() if k != "steps"), src


def test_modules_number_operands_are_special_sometimes(monkeypatch):
    """A third of the forward's number operands, and half the ``m.steps.add_(1)``, are special (drawn from
    ``_Body.special``)."""
    monkeypatch.setattr(source, "SPECIAL_VALUES", True)
    monkeypatch.setattr(modules_code, "P_CODE", 0.0)  # (session 34's code form takes statements' places)
    monkeypatch.setattr(modules_values, "P_VALUES", 0.0)  # (session 35's forms: test_session35_module_forms.py)
    monkeypatch.setattr(modules_hook_dicts, "P_HOOK_DICTS", 0.0)
    found = set()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for i in range(16):
            p = generate_program(32033, i, generators=("modules",))
            for s in p.stmts:
                found |= set(re.findall(r"float\('nan'\)|float\('inf'\)|1e300|2\*\*63|-0\.0", s.code))
    assert len(found) >= 3, found


_HUGE = re.compile(r"2\*\*\d+|\b1e300\b|\b1e39\b|\b65504\.0\b|\b1e5\b|\b300\b|-?\b(?:127|128|255|256|32767|32768|"
                   r"2147483647|2147483648|9223372036854775807|9223372036854775808)\b|float\('(?:nan|inf)'\)")


def test_dtype_programs_draw_special_and_huge_numbers(monkeypatch):
    """With --special-values dtype programs' literal numbers (constants, divisors, the number_range rule statements,
    a last statement writing a number the dtype cannot hold) are sometimes special or past the dtype's range."""
    monkeypatch.setattr(source, "SPECIAL_VALUES", True)
    hits, huge_ints = 0, 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for i in range(40):
            p = generate_program(32034, i, generators=("dtype",))
            for s in p.stmts:
                if _HUGE.search(s.code):
                    hits += 1
                    huge_ints += bool(re.search(r"2\*\*(?:31|63|64)|\b300\b|21474836\d\d", s.code))
    assert hits >= 10 and huge_ints >= 4, (hits, huge_ints)


@pytest.mark.parametrize("dtype", [torch.int8, torch.uint8, torch.int16, torch.int32, torch.int64, torch.float16,
                                   torch.bfloat16, torch.float32, torch.float64, torch.bool, torch.complex64], ids=str)
def test_special_number_fits_the_dtype(dtype):
    """``special_number`` offers the dtype's extremes and numbers past them, and never a zero or -1 divisor."""
    r = random.Random(7)
    drawn = {dtype_spellings.special_number(r, dtype) for _ in range(400)}
    divisors = {dtype_spellings.special_number(r, dtype, divisor=True) for _ in range(400)}
    assert not divisors & {"0", "-1", "0.0", "-0.0"}
    if dtype in (torch.int8, torch.uint8, torch.int16, torch.int32, torch.int64):
        info = torch.iinfo(dtype)
        assert {str(info.max), str(info.min), str(info.max + 1), "2**63", "2**64", "-1", "0"} <= drawn
    elif dtype.is_floating_point:
        assert {"float('nan')", "-float('inf')", "1e300", "2**64", "-0.0"} <= drawn
    for n in drawn:
        eval(n)  # (valid Python: the fuzz program's source)


def test_dtype_rule_number_range_takes_special_numbers(monkeypatch):
    """The number_range rule statements (dtype_rule_stmts.py) put a special number in place of one of theirs, with
    --special-values only."""
    env = {"a": torch.zeros(4, dtype=torch.int8), "b": torch.zeros(4, dtype=torch.float16)}
    seen = {False: set(), True: set()}
    for on in (False, True):
        monkeypatch.setattr(source, "SPECIAL_VALUES", on)
        rules = dtype_rule_stmts.RuleStatements("32035", env, ["a", "b"])
        for _ in range(60):
            for raises in (False, True):
                s = rules._number_range(raises)
                if s is not None:
                    seen[on].add(s.code)
    plain = {"fill_(7)", "clamp_(0, 3)", "clamp_(0, 1e4)", "fill_(-3.5)", "1000", "1e10", "2.5", "> 0, 3)",
             "clamp_(max=float('inf'))", "hardtanh"}
    assert all(any(p in c for p in plain) for c in seen[False]), seen[False]
    assert any(not any(p in c for p in plain) for c in seen[True]), seen[True]


def test_dtype_constants_divisors_and_last_writes_take_special_numbers(monkeypatch):
    """``DtypeGen._constant`` and ``_divisor`` give a number for the operand's dtype a third of the time, and
    ``bad_inplace`` (a program's last statement, one eager raises at) sometimes writes a number the destination's
    dtype cannot hold; with --special-values only."""
    from fusion_alias.fuzz.gen_dtype import DtypeGen

    env = {"a": torch.zeros(4, dtype=torch.int8), "h": torch.zeros(2, 2, dtype=torch.float16)}
    plain = {"2", "3", "-2", "1.5", "0.5", "True", "(1+2j)", "4"}
    for on in (False, True):
        monkeypatch.setattr(source, "SPECIAL_VALUES", on)
        gen = DtypeGen(random.Random(32036), dict(env), ["a", "h"])
        numbers = {gen._constant(x) for x in ("a", "h") for _ in range(60)}
        numbers |= {gen._divisor(x)[0] for x in ("a", "h") for _ in range(60)}
        last = {s.code for x in ("a", "h") for _ in range(30) for s in gen.bad_inplace()}
        assert not any(c in ("0", "-1", "-0.0") for c in {gen._divisor(x)[0] for x in ("a", "h") for _ in range(60)})
        if not on:
            assert numbers <= plain | {"(a.abs() + 1)", "(h.abs() + 1)"}, numbers
            assert not any(_HUGE.search(c) for c in last), last
        else:
            assert {"127", "-128", "128", "2**63", "1e300"} <= numbers, numbers
            assert any(re.search(r"\b(128|-129|2\*\*6[34]|1e300|1e5|1e39)\b", c) for c in last), last
