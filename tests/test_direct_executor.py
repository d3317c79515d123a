"""``thunder.jit(fn, executors=[fusion_alias.executor])``: Thunder's alias pass runs, we read its facts."""

import pytest
import thunder
import torch

import fusion_alias
from helpers import as_tuple
from programs import SEED_PROGRAMS

# Thunder 0.2.6's own insert_alias_updates raises a reshape error on aliased inputs of different
# numel (f, k, write_then_add): those programs never reach an executor.
THUNDER_CRASHES = {"f", "k", "write_then_add"}


@pytest.mark.parametrize("fn,make_inputs,max_regions", SEED_PROGRAMS, ids=[p[0].__name__ for p in SEED_PROGRAMS])
def test_direct_executor(fn, make_inputs, max_regions):
    jitted = thunder.jit(fn, executors=[fusion_alias.executor])
    x = torch.randn(5, 5)
    x2 = x.clone()
    if fn.__name__ in THUNDER_CRASHES:
        with pytest.raises(RuntimeError, match="reshape"):
            jitted(*make_inputs(x))
        return
    got, expected = as_tuple(jitted(*make_inputs(x))), as_tuple(fn(*make_inputs(x2)))
    for g, e in zip(got, expected):
        torch.testing.assert_close(g, e)
    torch.testing.assert_close(x, x2)
    trace = thunder.last_traces(jitted)[-1]
    n = sum(1 for b in trace.bound_symbols if b.sym.is_fusion)
    assert 1 <= n <= max_regions
    # Thunder's update_aliases barriers are gone: they are alias facts, not fusion breaks
    assert not any(b.sym.name == "update_aliases" for b in trace.bound_symbols)


# Note [arguments Thunder replaced] (replaced_args.py): Thunder's alias pass replaces an argument sharing a
# storage with an earlier one by that one; where they are not one layout, the direct executor refuses the call.
def _double_then_add(a, b):
    a.mul_(2)
    return a + b


def _rows(x):
    return x[0], x[1]


def _same(x):
    return x, x


def _transposed(x):
    return x, x.t()


def test_arguments_thunder_replaced_are_checked_at_each_call():
    jitted = thunder.jit(_double_then_add, executors=[fusion_alias.executor])
    for make, ok in ((_same, True), (_transposed, False), (_same, True), (_rows, False)):
        x, x_eager = torch.arange(16.0).reshape(4, 4), torch.arange(16.0).reshape(4, 4)
        if ok:
            want = _double_then_add(*make(x_eager))
            torch.testing.assert_close(jitted(*make(x)), want)
            torch.testing.assert_close(x, x_eager)
        else:
            with pytest.raises(fusion_alias.AliasInputError, match="replaced the argument b by a"):
                jitted(*make(x))
    # (plain thunder.jit computes with a in b's place: the wrong values the check keeps from the user)
    x = torch.arange(8.0).reshape(2, 4)
    assert not torch.equal(thunder.jit(_double_then_add)(*_rows(x.clone())), _double_then_add(*_rows(x.clone())))


def test_no_check_where_thunder_replaced_nothing():
    # a program that writes nothing: Thunder's alias pass returns at once, and the rows are read as they are
    def add(a, b):
        return a + b

    x = torch.arange(8.0).reshape(2, 4)
    torch.testing.assert_close(thunder.jit(add, executors=[fusion_alias.executor])(*_rows(x)), x[0] + x[1])
    # the alias pass skipped: nothing replaced, nothing to check (fusion_alias.jit runs so, guarded)
    y, y_eager = torch.arange(8.0).reshape(2, 4), torch.arange(8.0).reshape(2, 4)
    got = fusion_alias.jit(_double_then_add)(*_rows(y))
    torch.testing.assert_close(got, _double_then_add(*_rows(y_eager)))
    torch.testing.assert_close(y, y_eager)
