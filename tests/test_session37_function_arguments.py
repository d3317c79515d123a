"""Session 37 (helper): a Python function given as an argument whose code or defaults change between calls
(guard.py, Note [a function or a dtype given as an argument], its last paragraph).

The guard keyed a function argument by identity alone, and Thunder 0.2.6's interpreter reads a called function's
defaults (and runs its code) while tracing: ``f(x, helper)``, then ``helper.__defaults__[0]["k"] = 3.0`` (or
``helper.__defaults__``/``__code__`` replaced), then ``f(x, helper)`` ran the first call's number again, silently
(plain ``thunder.jit`` too; found by a hand probe beside the session 37 generator forms). The same function read
from a global was right (object_shapes.py, Note [a function's code and defaults]). Each test calls with the first
value, the changed one, then the first again, against eager on fresh inputs each call, the written input too, under
both reference schedules.
"""

import functools

import pytest
import thunder
import torch

import fusion_alias
from helpers import generated_programs, stream_digest

SCHEDULES = ["reads-first", "writes-first"]


def helper(x, c={"k": 2.0}):
    return x * c["k"]


def helper_default(x, k=2.0):
    return x * k


def helper_code(x):
    return x * 2.0


def _two(x):
    return x * 2.0


def _three(x):
    return x * 3.0


def helper_keyword_only(x, *, c={"k": 2.0}):
    return x * c["k"]


LAMBDA = lambda x, c={"k": 2.0}: x * c["k"]  # noqa: E731


class Reader:
    def read(self, x, c={"k": 2.0}):
        return x * c["k"]

    @staticmethod
    def static(x, c={"k": 2.0}):
        return x * c["k"]


class Scale(torch.nn.Module):
    def forward(self, x, c={"k": 2.0}):
        return x * c["k"]


def _set_item(container_of, key):
    return lambda v: container_of().__setitem__(key, v)


_CODES = {2.0: _two.__code__, 3.0: _three.__code__}
_READER, _SCALE = Reader(), Scale()
_CFG = {"k": 2.0}

# name -> (program of x and its other arguments, setter of the number, the call's other arguments)
WRONG_BEFORE = {
    "argument": (lambda x, h: x.add_(h(x)), _set_item(lambda: helper.__defaults__[0], "k"), lambda: (helper,)),
    "in-a-list": (lambda x, hs: x.add_(hs[0](x)), _set_item(lambda: helper.__defaults__[0], "k"), lambda: ([helper],)),
    "in-a-dict": (lambda x, hs: x.add_(hs["h"](x)), _set_item(lambda: helper.__defaults__[0], "k"),
                  lambda: ({"h": helper},)),
    "defaults-replaced": (lambda x, h: x.add_(h(x)), lambda v: setattr(helper_default, "__defaults__", (v,)),
                          lambda: (helper_default,)),
    "code-replaced": (lambda x, h: x.add_(h(x)), lambda v: setattr(helper_code, "__code__", _CODES[v]),
                      lambda: (helper_code,)),
    "keyword-only-default": (lambda x, h: x.add_(h(x)),
                             _set_item(lambda: helper_keyword_only.__kwdefaults__["c"], "k"),
                             lambda: (helper_keyword_only,)),
    "lambda": (lambda x, h: x.add_(h(x)), _set_item(lambda: LAMBDA.__defaults__[0], "k"), lambda: (LAMBDA,)),
}
RIGHT_BEFORE = {
    "bound-method": (lambda x, m: x.add_(m(x)), _set_item(lambda: Reader.read.__defaults__[0], "k"),
                     lambda: (_READER.read,)),
    "class-static-method": (lambda x, C: x.add_(C.static(x)), _set_item(lambda: Reader.static.__defaults__[0], "k"),
                            lambda: (Reader,)),
    "partial-keyword-dict": (lambda x, p: x.add_(p(x)), _set_item(lambda: _CFG, "k"),
                             lambda: (functools.partial(lambda x, c: x * c["k"], c=_CFG),)),
    "module-forward": (lambda x, m: x.add_(m(x)), _set_item(lambda: Scale.forward.__defaults__[0], "k"),
                       lambda: (_SCALE,)),
}


def _check(fn, set_value, others, schedule, jit=None):
    jitted = jit(fn) if jit else fusion_alias.jit(fn, backend="reference", schedule=schedule)
    try:
        for v in (2.0, 3.0, 2.0):
            set_value(v)
            xe, xj = torch.ones(3), torch.ones(3)
            torch.testing.assert_close(jitted(xj, *others()), fn(xe, *others()))
            torch.testing.assert_close(xj, xe)
    finally:
        set_value(2.0)


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("case", list(WRONG_BEFORE) + list(RIGHT_BEFORE))
def test_a_function_argument_changed_between_calls(case, schedule):
    _check(*{**WRONG_BEFORE, **RIGHT_BEFORE}[case], schedule)


def test_plain_thunder_is_wrong_there():
    with pytest.raises(AssertionError):
        _check(*WRONG_BEFORE["argument"], None, jit=thunder.jit)


def test_an_unchanged_function_argument_reuses_the_program():
    fn, _, others = WRONG_BEFORE["argument"]
    jitted = fusion_alias.jit(fn, backend="reference")
    for _ in range(3):
        jitted(torch.ones(3), *others())
    assert (thunder.cache_hits(jitted), thunder.cache_misses(jitted)) == (2, 1)


def test_another_function_compiles_anew():
    jitted = fusion_alias.jit(lambda x, h: x.add_(h(x)), backend="reference")
    torch.testing.assert_close(jitted(torch.ones(3), _two), torch.full((3,), 3.0))
    torch.testing.assert_close(jitted(torch.ones(3), _three), torch.full((3,), 4.0))


# -- the generator form (fuzz/hidden_function_args.py) ----------------------------------------------------------
# With ``P_NUMBER``, ``P_HELPER``, ``P_METHOD``, ``P_FUNCTION_ARG`` 1 (the base kind ``number_default`` only): seed
# 37005 (30 programs, reference backend, 3 schedules; the function argument then the form's one kind): 27 mismatches
# before the fix (and on 495c3bb), 0 / 0 / 0 after. Seed 37007, with its four kinds (a function argument, a function,
# a class or a callable object held in a helper's default: test_session37_function_defaults.py): docs/testing.md.

FORCED = {(37007, 12): "7a0299c668dee46ff83c4c6a347668ae425f01f5"}  # (seed, programs) -> the digest of the hidden stream with the form forced


def _force(monkeypatch, p_function_arg=1.0):
    from fusion_alias.fuzz import foreach_functions, hidden_function_args, hidden_methods, hidden_numbers, source

    monkeypatch.setattr(source, "SPECIAL_VALUES", False)
    monkeypatch.setattr(foreach_functions, "P_FOREACH_FN", 0.0)  # (session 45's form: test_session45_foreach_function_form.py)
    monkeypatch.setattr(hidden_numbers, "P_NUMBER", 1.0)
    monkeypatch.setattr(hidden_numbers, "KINDS", ("number_default",))
    monkeypatch.setattr(hidden_numbers, "P_HELPER", 1.0)
    monkeypatch.setattr(hidden_methods, "P_METHOD", 1.0)
    monkeypatch.setattr(hidden_function_args, "P_FUNCTION_ARG", p_function_arg)


@pytest.mark.parametrize("case", list(FORCED), ids=str)
def test_the_forced_stream_is_pinned(case, monkeypatch):
    _force(monkeypatch)
    assert stream_digest(("hidden",), *case) == FORCED[case]


_READS = {"number_default_function": "def call_n0(f=read_n0):", "number_default_class": "def call_n0(C=Cfg_n0):",
          "number_default_object": "def call_n0(f=Scale_n0()):"}


def test_the_function_is_the_last_argument_or_in_another_ones_default(monkeypatch):
    from fusion_alias.fuzz import hidden_function_args, hidden_methods, hidden_numbers, oracle

    _force(monkeypatch, 0.0)
    plain = generated_programs(("hidden",), 37007, 16)
    _force(monkeypatch)
    seen = set()
    for p, q in zip(plain, generated_programs(("hidden",), 37007, 16)):
        assert [k for h, k, _ in p.hidden if h == "n0"][0] in hidden_methods.KINDS
        (kind,) = [k for h, k, _ in q.hidden if h == "n0"]
        assert kind in hidden_function_args.KINDS and p.stmts == q.stmts
        seen.add(kind)
        src = oracle.program_source(q)
        assert hidden_numbers.install("n0", kind) in src
        if kind == hidden_function_args.KIND:
            assert q.args[:-1] == p.args and q.args[-1] == ("reader", "read_n0") and "    n0 = reader()" in src
        else:  # (default_contents.py, Note [a function held in a default], Note [a class or an object held in ...])
            assert q.args == p.args and _READS[kind] in src and "    n0 = call_n0()" in src
    assert seen == set(hidden_function_args.KINDS)


@pytest.mark.parametrize("index", [0, 13, 21])
def test_the_oracle_sees_the_class(index, monkeypatch):
    """Seed 37007 with the form forced: #0, #13, #21 (a function argument) were mismatches before the fix; each runs as eager now."""
    from fusion_alias.fuzz import oracle
    from fusion_alias.fuzz.generator import generate_program

    _force(monkeypatch)
    p = generate_program(37007, index, generators=("hidden",))
    assert [k for h, k, _ in p.hidden if h == "n0"] == ["number_function_arg"]
    for schedule in SCHEDULES:
        status, detail = oracle.run_program(p, schedule)
        assert status == "ok", detail
