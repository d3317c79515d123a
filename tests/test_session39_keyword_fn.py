"""Session 39: a keyword argument named ``fn`` (keyword_fn.py, Note [a keyword argument named fn]).

Thunder 0.2.6's interpreter cannot take a keyword argument named ``fn``, and from session 38
``fusion_alias.jit`` passed a function held in the jitted function's own default by name: ``def g(x,
fn=inner)`` failed on every call, where eager and plain ``thunder.jit(g)(x)`` run. The keyword now goes
to its position; a keyword-only ``fn`` default is left to Thunder and keyed by its shape; a keyword ``fn``
that cannot be passed positionally is refused with an error that names the problem. Each run is checked
against eager on fresh inputs (the written input too), under both reference schedules.
"""

import pytest
import thunder
import torch

import fusion_alias
from fusion_alias.keyword_fn import KeywordFnError

SCHEDULES = ["reads-first", "writes-first"]


def scaled(x, s=2.0):
    return x * s


def negated(x):
    return -x


def default_fn(x, fn=scaled):
    return x.add_(fn(x))


def default_fn_after_number(x, k=0.5, fn=scaled):
    return x.add_(fn(x) * k)


def keyword_only_fn(x, *, fn=scaled):
    return x.add_(fn(x))


def _helper(x, fn=scaled):
    return fn(x)


def inner_keyword_fn(x):
    return x.add_(_helper(x, fn=negated))


class ForwardWithFn(torch.nn.Module):
    def forward(self, x, fn=scaled):
        return x.add_(fn(x))


def _check(jitted, fn, args, kwargs=None):
    kwargs = kwargs or {}
    x = torch.arange(4.0)
    want_x = x.clone()
    want = fn(want_x, *args, **kwargs)
    got = jitted(x, *args, **kwargs)
    torch.testing.assert_close(got, want)
    torch.testing.assert_close(x, want_x)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_a_function_default_named_fn(schedule):
    jitted = fusion_alias.jit(default_fn, backend="reference", schedule=schedule)
    _check(jitted, default_fn, ())
    _check(jitted, default_fn, (), {"fn": negated})  # given by keyword: plain thunder.jit fails on this call
    _check(jitted, default_fn, (negated,))
    _check(jitted, default_fn, ())


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_the_parameters_before_fn_come_from_keywords_or_defaults(schedule):
    jitted = fusion_alias.jit(default_fn_after_number, backend="reference", schedule=schedule)
    _check(jitted, default_fn_after_number, (), {"fn": negated})
    _check(jitted, default_fn_after_number, (), {"fn": negated, "k": 3.0})
    _check(jitted, default_fn_after_number, (), {"k": 3.0})
    _check(jitted, default_fn_after_number, (2.0,), {"fn": scaled})


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_the_function_default_changed_between_calls_is_seen(schedule):
    """The default ``fn`` is passed as an argument (mutable_defaults.py), so its replaced defaults recompile."""
    for program in (default_fn, keyword_only_fn):
        jitted = fusion_alias.jit(program, backend="reference", schedule=schedule)
        try:
            for s in (2.0, 3.0, 2.0):
                scaled.__defaults__ = (s,)
                _check(jitted, program, ())
        finally:
            scaled.__defaults__ = (2.0,)


def test_a_module_forward_with_fn():
    module = ForwardWithFn()
    jitted = fusion_alias.jit(module, backend="reference")
    for kwargs in ({}, {"fn": negated}):
        x = torch.arange(4.0)
        want_x = x.clone()
        want = module(want_x, **kwargs)
        torch.testing.assert_close(jitted(x, **kwargs), want)
        torch.testing.assert_close(x, want_x)


def test_a_keyword_only_fn_given_is_refused_by_name():
    jitted = fusion_alias.jit(keyword_only_fn, backend="reference")
    _check(jitted, keyword_only_fn, ())
    with pytest.raises(KeywordFnError, match="keyword argument named 'fn'.*pass it positionally"):
        jitted(torch.arange(4.0), fn=negated)


def test_a_call_inside_the_program_with_fn_is_refused_by_name():
    with pytest.raises(KeywordFnError, match="keyword argument named 'fn'"):
        fusion_alias.jit(inner_keyword_fn, backend="reference")(torch.arange(4.0))
    with pytest.raises(Exception, match="general_jit_lookaside"):  # (plain Thunder's own words: the limitation is Thunder's)
        thunder.jit(inner_keyword_fn)(torch.arange(4.0))


def test_a_call_eager_rejects_raises_eagers_type_error():
    jitted = fusion_alias.jit(default_fn_after_number, backend="reference")
    with pytest.raises(TypeError, match="multiple values for argument 'fn'"):
        jitted(torch.arange(4.0), 1.0, negated, fn=scaled)


@pytest.mark.parametrize("name", ["self", "fn", "args", "kwargs", "cls", "key", "flat", "ctx"])
def test_a_keyword_named_as_a_wrappers_own_parameter(name):
    """``jitted(x, self=2.0)`` met ``AliasSpecializedFunction.__call__``'s own ``self`` ("got multiple values for
    argument 'self'"; plain ``thunder.jit`` runs it): the wrappers' ``self`` is positional-only now. Each name
    both as a number given by keyword and as a function default the filler passes."""
    ns: dict = {}
    exec(f"def g(y, {name}=1.0):\n    return y.mul_({name})\n\n"
         f"def inner(z):\n    return z * 5\n\n"
         f"def h(y, {name}=inner):\n    return y.add_({name}(y))\n", ns)
    g, h = fusion_alias.jit(ns["g"], backend="reference"), fusion_alias.jit(ns["h"], backend="reference")
    for kwargs in ({name: 2.0}, {}, {name: 3.0}):
        x = torch.arange(3.0)
        torch.testing.assert_close(g(x, **kwargs), ns["g"](torch.arange(3.0), **kwargs))
        torch.testing.assert_close(x, ns["g"](torch.arange(3.0), **kwargs))
    x = torch.arange(3.0)
    torch.testing.assert_close(h(x), ns["h"](torch.arange(3.0)))
    torch.testing.assert_close(x, torch.arange(3.0) * 6)


@pytest.mark.parametrize("name", ["args", "kwargs"])
def test_a_tensor_parameter_named_args_is_refused_by_name(name):
    """keyword_fn.py, Note [a tensor parameter named args or kwargs]: Thunder's prologue fails on it (plain
    ``thunder.jit``: "expected Tensor, got tuple"); a number under that name runs."""
    ns: dict = {}
    exec(f"def g(x, {name}):\n    return x.mul_({name})\n", ns)
    jitted = fusion_alias.jit(ns["g"], backend="reference")
    with pytest.raises(KeywordFnError, match=f"parameter named '{name}'.*Rename it"):
        jitted(torch.ones(2), torch.full((2,), 3.0))
    with pytest.raises(AssertionError, match="expected Tensor"):
        thunder.jit(ns["g"])(torch.ones(2), torch.full((2,), 3.0))
    x = torch.ones(2)
    torch.testing.assert_close(fusion_alias.jit(ns["g"], backend="reference")(x, 3.0), torch.full((2,), 3.0))
    torch.testing.assert_close(x, torch.full((2,), 3.0))
