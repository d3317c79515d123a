"""``a is b`` on tensors in a compiled program (tensor_identity.py, Note [tensor identity in a trace])."""

import pytest
import thunder
import torch

import fusion_alias
from fusion_alias.backends.reference import SCHEDULES


def _result_of_an_inplace_op(x):
    y = x.add_(1)
    return x * (2 if y is x else 3) * (5 if y is not x else 7)


def _chained_inplace_results(x):
    y = x.sigmoid_().mul_(2)  # (sigmoid_ is fusion_alias's composite symbol)
    z = x[0]
    return x * (2 if y is x else 3) * (5 if z is x else 7)


def _copy_into_the_second(x, y):
    z = y.copy_(x)
    return x * (2 if z is y else 3) * (5 if z is x else 7)


def _same_proxy(x):
    y = x
    return x * (2 if y is x else 3) * (5 if x.exp() is x else 7)


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize(
    "fn, make",
    [
        (_result_of_an_inplace_op, lambda: (torch.ones(2),)),
        (_chained_inplace_results, lambda: (torch.ones(2),)),
        (_copy_into_the_second, lambda: (torch.ones(2), torch.zeros(2))),
        (_same_proxy, lambda: (torch.ones(2),)),
    ],
    ids=["inplace-result", "chained", "copy_", "same-proxy"],
)
def test_identity_of_tensors_is_eagers(fn, make, schedule):
    # an in-place op returns its own tensor: Thunder's proxies answered `y is x` False (plain thunder.jit too)
    jitted = fusion_alias.jit(fn, backend="reference", schedule=schedule)
    for _ in range(2):
        args_e, args_j = make(), make()
        torch.testing.assert_close(jitted(*args_j), fn(*args_e))
        for a, b in zip(args_j, args_e):
            torch.testing.assert_close(a, b)


def test_plain_thunder_keeps_its_own_answer():
    # the handler acts in calls of fusion_alias.jit only
    got = thunder.jit(_result_of_an_inplace_op)(torch.ones(2))
    torch.testing.assert_close(got, torch.full((2,), 2.0 * 3 * 5))
