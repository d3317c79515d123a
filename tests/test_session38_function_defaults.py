"""Session 38 (helper): a function or a class held in the jitted function's own default, and a keyword-only
default set in place, changed between calls.

``def f(x, g=inner)`` with ``def inner(x, c={"k": 2.0})``, ``def f(x, C=Cfg)`` with ``Cfg.k`` set, ``def f(x,
fs=(inner,))``: mutable_defaults.py took functions, classes and tuples of them for constants, so nothing keyed
them and ``c["k"] = 3.0`` between calls ran the first call's number again, silently (plain ``thunder.jit`` too):
mutable_defaults.py, Note [a function or a class in the jitted function's own default]. And ``def inner(x, *,
k=2.0)`` with ``inner.__kwdefaults__["k"] = 3.0``, whether the program calls ``inner`` from a global, is given it,
or holds it in a default: the function's shape held ``__kwdefaults__`` by identity and took no constant in it
(default_contents.py, Note [a keyword default set in place]); the jitted function's own keyword-only default set in
place likewise (mutable_defaults.py, Note [the jitted function's own keyword defaults set in place]), and a closure
cell of a function held in a called helper's default (default_contents.py, Note [the closure of a function held in a
default]). Each test calls with the first value, the changed
one, then the first again, against eager on fresh inputs each call, the written input too, under both reference
schedules.
"""

import functools

import pytest
import thunder
import torch
import torch.nn.functional as F

import fusion_alias

SCHEDULES = ["reads-first", "writes-first"]


def inner(x, c={"k": 2.0}):
    return x * c["k"]


def inner_kw(x, *, k=2.0):
    return x * k


class Cfg:
    k = 2.0


class SubCfg(Cfg):
    pass


def _set_inner(v):
    inner.__defaults__[0]["k"] = v


def _set_kw(v):
    inner_kw.__kwdefaults__["k"] = v


def _set_cfg(v):
    Cfg.k = v


def own_function(x, g=inner):
    return x.add_(g(x))


def own_keyword_only_function(x, *, g=inner):
    return x.add_(g(x))


def own_tuple_of_functions(x, gs=(inner, torch.relu)):
    return x.add_(gs[0](x))


def own_class(x, C=Cfg):
    return x.add_(x * C.k)


def own_subclass(x, C=SubCfg):
    return x.add_(x * getattr(C, "k"))


def own_keyword_default_set_in_place(x, g=inner_kw):
    return x.add_(g(x))


def _calls_helper(x, g=inner):
    return g(x)


def own_function_two_levels(x, h=_calls_helper):
    return x.add_(h(x))


def global_keyword_default(x):
    return x.add_(inner_kw(x))


def _helper_kw(x, g=inner_kw):
    return g(x)


def helper_keyword_default(x):
    return x.add_(_helper_kw(x))


def _helper_tuple(x, fs=(inner,), cs=(Cfg,)):
    return fs[0](x) + x * cs[0].k


def helper_tuple_defaults(x):  # (a tuple holding a function or a class: default_contents.py took it for a constant)
    return x.add_(_helper_tuple(x))


class WithFunctionDefault(torch.nn.Module):
    def forward(self, x, g=inner):
        return x.add_(g(x))


_MODULE = WithFunctionDefault()


def _make_closure():
    k = 2.0

    def read(x):
        return x * k

    def set_k(v):
        nonlocal k
        k = v

    return read, set_k


_CLOSURE_OWN, _SET_CLOSURE_OWN = _make_closure()
_CLOSURE_HELPER, _SET_CLOSURE_HELPER = _make_closure()


def own_closure_default(x, g=_CLOSURE_OWN):
    return x.add_(g(x))


def _helper_closure(x, g=_CLOSURE_HELPER):
    return g(x)


def helper_closure_default(x):  # (default_contents.py, Note [the closure of a function held in a default])
    return x.add_(_helper_closure(x))


_KW_HOLDERS = {"g": inner_kw}


def global_dict_keyword_default(x):
    return x.add_(_KW_HOLDERS["g"](x))


def own_keyword_default(x, *, k=2.0):
    return x.mul_(k)


def own_keyword_container(x, *, s={"k": 2.0}):
    return x.mul_(s["k"])


class WithKeywordDefault(torch.nn.Module):
    def forward(self, x, *, k=2.0):
        return x.mul_(k)


_KW_MODULE = WithKeywordDefault()


def _set_own_kw(v):
    own_keyword_default.__kwdefaults__["k"] = v


def _set_own_container(v):
    own_keyword_container.__kwdefaults__["s"] = {"k": v}


def _set_module_kw(v):
    WithKeywordDefault.forward.__kwdefaults__["k"] = v

# name -> (function, setter of the number, extra arguments)
CASES = {
    "own-function": (own_function, _set_inner, ()),
    "own-keyword-only-function": (own_keyword_only_function, _set_inner, ()),
    "own-tuple-of-functions": (own_tuple_of_functions, _set_inner, ()),
    "own-class": (own_class, _set_cfg, ()),
    "own-inherited-class-attribute": (own_subclass, _set_cfg, ()),
    "own-function-two-levels": (own_function_two_levels, _set_inner, ()),
    "own-function-keyword-default-set-in-place": (own_keyword_default_set_in_place, _set_kw, ()),
    "module-forward-function-default": (_MODULE, _set_inner, ()),
    "global-function-keyword-default-set-in-place": (global_keyword_default, _set_kw, ()),
    "helper-default-keyword-default-set-in-place": (helper_keyword_default, _set_kw, ()),
    "helper-tuple-of-functions": (helper_tuple_defaults, _set_inner, ()),
    "helper-tuple-of-classes": (helper_tuple_defaults, _set_cfg, ()),
    "argument-keyword-default-set-in-place": (lambda x, g: x.add_(g(x)), _set_kw, (inner_kw,)),
    "list-argument-keyword-default-set-in-place": (lambda x, gs: x.add_(gs[0](x)), _set_kw, ([inner_kw],)),
    "own-default-function-closure": (own_closure_default, _SET_CLOSURE_OWN, ()),
    "helper-default-function-closure": (helper_closure_default, _SET_CLOSURE_HELPER, ()),
    "global-dict-keyword-default-set-in-place": (global_dict_keyword_default, _set_kw, ()),
    # (mutable_defaults.py, Note [the jitted function's own keyword defaults set in place])
    "own-keyword-default-set-in-place": (own_keyword_default, _set_own_kw, ()),
    "own-keyword-container-replaced-in-place": (own_keyword_container, _set_own_container, ()),
    "module-forward-keyword-default-set-in-place": (_KW_MODULE, _set_module_kw, ()),
}


def _check(fn, set_value, extra, schedule, jit=None):
    jitted = jit(fn) if jit else fusion_alias.jit(fn, backend="reference", schedule=schedule)
    try:
        for v in (2.0, 3.0, 2.0):
            set_value(v)
            xe, xj = torch.ones(3), torch.ones(3)
            torch.testing.assert_close(jitted(xj, *extra), fn(xe, *extra))
            torch.testing.assert_close(xj, xe)
    finally:
        set_value(2.0)


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("case", list(CASES))
def test_a_default_changed_between_calls(case, schedule):
    fn, set_value, extra = CASES[case]
    _check(fn, set_value, extra, schedule)


@pytest.mark.parametrize("case", ["own-function", "own-class", "global-function-keyword-default-set-in-place",
                                  "own-keyword-default-set-in-place"])
def test_plain_thunder_is_wrong_there(case):
    fn, set_value, extra = CASES[case]
    with pytest.raises(AssertionError):
        _check(fn, set_value, extra, None, jit=thunder.jit)


@pytest.mark.parametrize("fn", [own_function, own_class, own_tuple_of_functions, global_keyword_default,
                                own_keyword_default, own_keyword_container])
def test_an_unchanged_default_reuses_the_program(fn):
    jitted = fusion_alias.jit(fn, backend="reference")
    for _ in range(3):
        jitted(torch.ones(3))
    assert (thunder.cache_hits(jitted), thunder.cache_misses(jitted)) == (2, 1)


def _library_defaults(x, act=F.relu, builtin=torch.tanh, cls=torch.nn.ReLU, dt=torch.float64, p=functools.partial(F.gelu)):
    return x.add_(act(x) + builtin(x) + cls()(x) + p(x)).to(dt)


def test_library_functions_and_classes_in_defaults_run_and_reuse_the_program():
    jitted = fusion_alias.jit(_library_defaults, backend="reference")
    for _ in range(3):
        xe, xj = torch.randn(4), None
        xj = xe.clone()
        torch.testing.assert_close(jitted(xj), _library_defaults(xe))
        torch.testing.assert_close(xj, xe)
    assert (thunder.cache_hits(jitted), thunder.cache_misses(jitted)) == (2, 1)


def test_a_function_default_given_by_the_call_is_used():
    jitted = fusion_alias.jit(own_function, backend="reference")
    for g in (inner, inner_kw, inner):
        xe, xj = torch.ones(3), torch.ones(3)
        torch.testing.assert_close(jitted(xj, g), own_function(xe, g))
        torch.testing.assert_close(xj, xe)
