"""Named results (``x.max(0).values``) inside compiled functions: return_types.py, Note [named results]."""

import pytest
import thunder
import torch

import fusion_alias
from fusion_alias.backends.reference import SCHEDULES


def _x():
    return torch.tensor([[3.0, 1.0, 2.0], [0.0, 5.0, 4.0]])


PROGRAMS = {
    "max_values": lambda x: x.max(0).values * 2,
    "torch_max_indices_by_keyword": lambda x: torch.max(x, dim=1).indices,
    "max_of_all_is_a_tensor": lambda x: x.max() + 1,
    "max_of_two_tensors": lambda x: torch.max(x, x * 0.5),
    "min_unpacked": lambda x: (lambda r: r[0] + r[1])(x.min(1)),
    "sort_descending": lambda x: x.sort(1, descending=True).values[:, 0],
    "topk_both_spellings": lambda x: torch.topk(x, 2).indices.float() + x.topk(2, dim=0).values.sum(),
    "kthvalue": lambda x: x.kthvalue(2, 1).values,
    "median": lambda x: x.median(1).values,
    "mode": lambda x: torch.mode(x, 1).values,
    "aminmax_fields": lambda x: torch.aminmax(x).max - x.aminmax(dim=0).min,
    "cummax": lambda x: x.cummax(1).indices,
    "returned_whole": lambda x: torch.max(x, 0),
    "returned_inside_a_tuple": lambda x: (x.sort(1), x.min(0).values),
    # a named result's tensors in an aliasing program: values are fresh memory, x is written after
    "written_after": lambda x: (x.max(1).values.mul_(2), x.add_(1), x.max(0)),
}


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_a_named_result_is_eagers(name, schedule):
    fn = PROGRAMS[name]
    jitted = fusion_alias.jit(fn, backend="reference", schedule=schedule)
    for _ in range(2):  # (the second call: the cached program)
        x_eager, x_jit = _x(), _x()
        want, got = fn(x_eager), jitted(x_jit)
        assert type(got) is type(want)
        if isinstance(want, tuple):
            assert [type(g) for g in got] == [type(w) for w in want]  # torch.return_types.* as eager's
        torch.testing.assert_close(got, want)
        torch.testing.assert_close(x_jit, x_eager)


def test_a_named_result_through_the_executor_used_directly():
    fn = PROGRAMS["returned_whole"]
    got = thunder.jit(fn, executors=[fusion_alias.executor])(_x())
    assert type(got) is torch.return_types.max
    torch.testing.assert_close(got.values, fn(_x()).values)


def test_a_named_result_with_gradients():
    def fn(x):
        return (x * 1).max(1).values.sum() + torch.sort(x, 0).values[0].sum()

    x_eager, x_jit = _x().requires_grad_(), _x().requires_grad_()
    fn(x_eager).backward()
    fusion_alias.jit(fn)(x_jit).backward()
    torch.testing.assert_close(x_jit.grad, x_eager.grad)
