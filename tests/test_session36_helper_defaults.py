"""Session 36: a container default of a function the program calls, changed in place between calls
(default_contents.py, Note [a default container of a function the program calls]).

Thunder 0.2.6 binds a called function's default values as constants: what the program reads of a default dict,
list or object was baked into the first call's trace and checked by nothing, so the first call's number kept
running once the user changed the container, silently (plain ``thunder.jit`` too; session 35 probe, listed in
docs/limits.md until now). Each test calls with the first contents, the changed ones, then the first again,
against eager on fresh inputs each call, the written input too, under both reference schedules.
"""

import functools
import math

import pytest
import thunder
import torch

import fusion_alias
from helpers import generated_programs, stream_digest
from number_forms import forms_off

SCHEDULES = ["reads-first", "writes-first"]


def helper_dict(x, cfg={"k": 2.0}):
    return x * cfg["k"]


def helper_list(x, ks=[2.0]):
    return x * ks[0]


class Opt:
    pass


OPT = Opt()
OPT.lr = 2.0


def helper_object(x, o=OPT):
    return x * o.lr


def helper_nested(x, cfg={"a": {"b": [1.0, 2.0]}}):
    return x * cfg["a"]["b"][1]


def helper_keyword_only(x, *, cfg={"k": 2.0}):
    return x * cfg["k"]


def inner(x, cfg={"k": 2.0}):
    return x + cfg["k"]


def outer(x):
    return inner(x) * 1


def _closure():
    def helper(x, cfg={"k": 2.0}):
        return x * cfg["k"]

    return helper


helper_closure = _closure()


class Holder:
    @staticmethod
    def static(x, cfg={"k": 2.0}):
        return x * cfg["k"]

    @classmethod
    def cls(cls, x, cfg={"k": 2.0}):
        return x * cfg["k"]

    def method(self, x, cfg={"k": 2.0}):
        return x * cfg["k"]


LAMBDA = lambda x, cfg={"k": 2.0}: x * cfg["k"]  # noqa: E731


def _base(x, cfg):
    return x * cfg["k"]


PARTIAL = functools.partial(_base, cfg={"k": 2.0})


class Sub(torch.nn.Module):
    def forward(self, x, cfg={"k": 2.0}):
        return x * cfg["k"]


class Top(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.sub = Sub()

    def forward(self, x):
        return self.sub(x).add_(1)


class Method(torch.nn.Module):
    def forward(self, x):
        return self.go(x).add_(1)

    def go(self, x, cfg={"k": 2.0}):
        return x * cfg["k"]


HOLDER = Holder()


def _set(container, key):
    return lambda v: container.__setitem__(key, v)


# name -> (function of x that writes x and reads the default, setter of the read number)
CASES = {
    "dict": (lambda x: x.mul_(helper_dict(x.new_ones(3)).sum()), _set(helper_dict.__defaults__[0], "k")),
    "list": (lambda x: x.add_(helper_list(x)), _set(helper_list.__defaults__[0], 0)),
    "object": (lambda x: x.add_(helper_object(x)), lambda v: setattr(OPT, "lr", v)),
    "nested": (lambda x: x.add_(helper_nested(x)), _set(helper_nested.__defaults__[0]["a"]["b"], 1)),
    "keyword-only": (lambda x: x.add_(helper_keyword_only(x)), _set(helper_keyword_only.__kwdefaults__["cfg"], "k")),
    "called-by-a-helper": (lambda x: x.add_(outer(x)), _set(inner.__defaults__[0], "k")),
    "closure": (lambda x: x.add_(helper_closure(x)), _set(helper_closure.__defaults__[0], "k")),
    "staticmethod": (lambda x: x.add_(Holder.static(x)), _set(Holder.static.__defaults__[0], "k")),
    "classmethod": (lambda x: x.add_(Holder.cls(x)), _set(Holder.cls.__func__.__defaults__[0], "k")),
    "method": (lambda x: x.add_(HOLDER.method(x)), _set(Holder.method.__defaults__[0], "k")),
    "lambda": (lambda x: x.add_(LAMBDA(x)), _set(LAMBDA.__defaults__[0], "k")),
    "partial": (lambda x: x.add_(PARTIAL(x)), _set(PARTIAL.keywords["cfg"], "k")),
}


def _check(fn, jitted, set_value, *, values=(2.0, 3.0, 2.0)):
    try:
        for v in values:
            set_value(v)
            xe, xj = torch.ones(3), torch.ones(3)
            torch.testing.assert_close(jitted(xj), fn(xe))
            torch.testing.assert_close(xj, xe)
    finally:
        set_value(values[0])


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("case", sorted(CASES))
def test_a_called_function_default_changed_in_place(case, schedule):
    fn, set_value = CASES[case]
    _check(fn, fusion_alias.jit(fn, backend="reference", schedule=schedule), set_value)


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("module", [Top, Method], ids=["submodule-forward", "module-method"])
def test_a_module_method_default_changed_in_place(module, schedule):
    m = module()
    fn = m.sub.forward if module is Top else m.go
    _check(m, fusion_alias.jit(m, backend="reference", schedule=schedule), _set(fn.__func__.__defaults__[0], "k"))


def test_unchanged_contents_reuse_the_program():
    """The same contents (a NaN among them, which equals no NaN) hit the cache: nothing compiles again."""

    def helper(x, cfg={"k": 2.0, "eps": math.nan, "dims": (0,)}):
        return x * cfg["k"]

    def fn(x):
        return x.add_(helper(x))

    jitted = fusion_alias.jit(fn, backend="reference")
    for _ in range(3):
        xe, xj = torch.ones(3), torch.ones(3)
        torch.testing.assert_close(jitted(xj), fn(xe))
    assert (thunder.cache_hits(jitted), thunder.cache_misses(jitted)) == (2, 1)


def test_a_default_number_changing_type_and_value():
    def helper(x, cfg={"k": 2}):
        return x * (cfg["k"] / 3)

    def fn(x):
        return x.add_(helper(x))

    _check(fn, fusion_alias.jit(fn, backend="reference"), _set(helper.__defaults__[0], "k"), values=(2, 2.0, True, 2))


def test_a_default_the_program_appends_to():
    """``hist.append(1)`` inside: each call finds other contents and compiles its own program, whose tracing
    appends once, as eager's call does."""

    def helper(x, hist=[]):
        hist.append(1)
        return x * len(hist)

    def fn(x):
        return helper(x)

    jitted = fusion_alias.jit(fn, backend="reference")
    got = [jitted(torch.ones(3))[0].item() for _ in range(3)]
    assert got == [1.0, 2.0, 3.0] and len(helper.__defaults__[0]) == 3


def test_a_large_default_read_only_reuses_the_program():
    table = list(range(20_000))

    def helper(x, table=table):
        return x * table[2]

    def fn(x):
        return x.add_(helper(x))

    jitted = fusion_alias.jit(fn, backend="reference")
    for _ in range(3):
        xe, xj = torch.ones(3), torch.ones(3)
        torch.testing.assert_close(jitted(xj), fn(xe))
    assert (thunder.cache_hits(jitted), thunder.cache_misses(jitted)) == (2, 1)


def test_a_default_too_large_to_take_compiles_at_each_call():
    big = list(range(200_000))

    def helper(x, table=big):
        return x * table[1]

    def fn(x):
        return x.add_(helper(x))

    jitted = fusion_alias.jit(fn, backend="reference")
    for v in (1, 5, 1):
        big[1] = v
        xe, xj = torch.ones(3), torch.ones(3)
        torch.testing.assert_close(jitted(xj), fn(xe))
        torch.testing.assert_close(xj, xe)


# -- the generator form (fuzz/hidden_numbers.py, ``number_helper``) ---------------------------------------------
# With P_NUMBER and P_HELPER 1, seed 36002 (40 programs, reference backend, 3 schedules): 5 mismatches on the code
# before the fix, 0 after.

DIGEST_36002_WITHOUT_HELPER = "fc850152dcd677a41b961d4d7c4b3e0228efdcec"  # (made on 495c3bb, before the form)


def _hidden_programs(seed, n):
    return generated_programs(("hidden",), seed, n)


def test_the_hidden_generator_reads_a_number_from_a_helper_default(monkeypatch):
    from fusion_alias.fuzz import hidden_numbers, oracle

    monkeypatch.setattr(hidden_numbers, "P_NUMBER", 1.0)
    monkeypatch.setattr(hidden_numbers, "P_HELPER", 1.0)
    forms_off(monkeypatch)  # (the number forms since session 38: number_forms.py)
    helpers = 0
    for p in _hidden_programs(36002, 20):
        kinds = [k for h, k, _ in p.hidden if h == hidden_numbers.NAME]
        assert kinds and kinds[0] != "number_default"
        if kinds[0] == hidden_numbers.HELPER:
            helpers += 1
            src = oracle.program_source(p)
            assert "def read_n0(opts=HELPER_DEFAULTS):" in src and "    n0 = read_n0()" in src
            assert "HELPER_DEFAULTS['n0'] = hidden['n0']" in src
            assert not any(s.must_refuse == hidden_numbers.CHANGED for s in p.stmts)
    assert helpers >= 4


def test_the_helper_form_off_leaves_the_programs_as_they_were(monkeypatch):
    from fusion_alias.fuzz import hidden_numbers

    monkeypatch.setattr(hidden_numbers, "P_NUMBER", 1.0)
    monkeypatch.setattr(hidden_numbers, "P_HELPER", 0.0)
    monkeypatch.setattr(hidden_numbers, "P_ARRAY", 0.0)  # (test_session36_numpy_arrays.py)
    monkeypatch.setattr(hidden_numbers, "P_ITERATOR", 0.0)  # (test_session36_outside_iterators.py)
    forms_off(monkeypatch)  # (the number forms since session 38: number_forms.py)
    from fusion_alias.fuzz import foreach_functions

    monkeypatch.setattr(foreach_functions, "P_FOREACH_FN", 0.0)  # (session 45's form: test_session45_foreach_function_form.py)
    assert all(k != hidden_numbers.HELPER for p in _hidden_programs(36002, 12) for _, k, _ in p.hidden)
    # (the stream as session 35 made it: these programs hold no helper with the form off)
    assert stream_digest(("hidden",), 36002, 12) == DIGEST_36002_WITHOUT_HELPER
