"""Session 35 (helper): a default argument holding a list, a dict or an object, whose numbers the user changes
between calls (``def f(x, s=S)``; ``S["lr"] = 0.05``). Thunder 0.2.6 reads a default as a constant: the numbers
read from it were baked into the compiled program and checked by nothing, silently (plain ``thunder.jit`` too). Now
passed as arguments of the call (mutable_defaults.py, Note [a number read from a default argument's container])."""

import pytest
import torch

import fusion_alias

SCHEDULES = ("reads-first", "writes-first")


def _calls(make, change, call=lambda f, x: f(x), n=4):
    """Eager's and the jitted function's results over ``n`` calls, ``change(state)`` between calls."""
    out = []
    for wrap in (lambda f: f, lambda f: fusion_alias.jit(f, backend="reference", schedule=SCHEDULE[0])):
        f, state = make()
        g = wrap(f)
        results = []
        for _ in range(n):
            x = torch.ones(3)
            r = call(g, x)
            results.append((r.clone(), x.clone()))
            change(state)
        out.append(results)
    return out


SCHEDULE = ["reads-first"]


@pytest.fixture(params=SCHEDULES, autouse=True)
def _schedule(request):
    SCHEDULE[0] = request.param


def _same(eager, jitted):
    for (r, x), (rj, xj) in zip(eager, jitted):
        torch.testing.assert_close(rj, r)
        torch.testing.assert_close(xj, x)


def dict_default():
    S = {"lr": 0.1}

    def f(x, s=S):
        x.sub_(s["lr"] * x)
        return x * 2

    return f, S


def list_default():
    L = [0.1]

    def f(x, s=L, k=2):
        return x * s[0] * k

    return f, L


def object_default():
    class Cfg:
        lr = 0.1

    c = Cfg()

    def f(x, cfg=c):
        return x.mul_(cfg.lr)

    return f, c


def keyword_only_default():
    D = {"w": 2.0}

    def f(x, *, s=D):
        return x * s["w"]

    return f, D


def tuple_default_holding_a_list():
    L = [1.0]

    def f(x, s=(L, 2)):
        return x * s[0][0] * s[1]

    return f, L


def test_a_number_of_a_dict_default():
    _same(*_calls(dict_default, lambda s: s.update(lr=s["lr"] / 2)))


def test_a_number_of_a_list_default():
    _same(*_calls(list_default, lambda s: s.__setitem__(0, s[0] / 2)))


def test_a_list_default_with_another_argument_given_by_keyword():
    _same(*_calls(list_default, lambda s: s.__setitem__(0, s[0] / 2), call=lambda f, x: f(x, k=3)))


def test_an_attribute_of_an_object_default():
    _same(*_calls(object_default, lambda c: setattr(c, "lr", c.lr / 2)))


def test_a_keyword_only_dict_default():
    _same(*_calls(keyword_only_default, lambda s: s.update(w=s["w"] + 1)))


def test_a_list_in_a_tuple_default():
    _same(*_calls(tuple_default_holding_a_list, lambda s: s.__setitem__(0, s[0] + 1)))


def test_a_dict_default_holding_a_tensor_rebound_between_calls():
    def make():
        D = {"w": torch.ones(3)}

        def f(x, s=D):
            return x * s["w"]

        return f, D

    _same(*_calls(make, lambda s: s.update(w=s["w"] * 2)))  # (plain thunder.jit raises: a tensor constant)


def test_a_module_forward_dict_default():
    class M(torch.nn.Module):
        def forward(self, x, s={"k": 1.0}):  # noqa: B006 - the point of the test
            return x * s["k"]

    def make():  # (one dict for every M: each side starts from k = 1)
        M.forward.__defaults__[0]["k"] = 1.0
        return M(), M.forward.__defaults__[0]

    _same(*_calls(make, lambda s: s.update(k=s["k"] + 1)))


def test_a_default_the_call_passes_is_not_replaced():
    f, S = list_default()
    j = fusion_alias.jit(f, backend="reference", schedule=SCHEDULE[0])
    torch.testing.assert_close(j(torch.ones(3), [0.5]), torch.full((3,), 1.0))
    torch.testing.assert_close(j(torch.ones(3), s=[0.25]), torch.full((3,), 0.5))
    torch.testing.assert_close(j(torch.ones(3)), torch.full((3,), 0.2))


def test_a_counter_the_function_changes_in_a_default_dict_is_refused_by_name():
    def f(x, c={"n": 0}):  # noqa: B006
        c["n"] += 1
        return x * c["n"]

    with pytest.raises(NotImplementedError, match="changes a Python number"):
        fusion_alias.jit(f, backend="reference", schedule=SCHEDULE[0])(torch.ones(3))
