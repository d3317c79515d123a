"""Layout and address queries Thunder answers at trace time (layout_queries.py, Note [a layout query
answered at trace time]): eager's branch, or a clear refusal; never the stand-in's branch silently.
Session 17 hand probes: ``a * 1 if a.is_contiguous() else a * 2`` of a transposed input returned
``a * 1`` (plain ``thunder.jit`` too), and ``a.data_ptr() == b.data_ptr()`` was True for two tensors."""

import pytest
import torch

import fusion_alias
from fusion_alias.backends.reference import SCHEDULES
from fusion_alias.layout_queries import LayoutQueryError


def _ramp(*shape):
    return torch.arange(float(torch.Size(shape).numel())).reshape(shape)


def _layouts():
    """name -> a fresh input of that layout (a 4x6 ramp, transposed or strided)."""
    return {"contiguous": lambda: _ramp(4, 6), "transposed": lambda: _ramp(6, 4).t(),
            "strided": lambda: _ramp(4, 12)[:, ::2]}


def branch_on_is_contiguous(a):
    return a * 1 if a.is_contiguous() else a * 2


def contiguous_idiom_then_write(a):
    if not a.is_contiguous():
        a = a.contiguous()
    v = a.view(-1)
    v.add_(1)
    return v


def branch_on_dim_order(a):
    return a * 1 if a.dim_order() == (0, 1) else a * 2


def branch_on_a_result(a):
    c = a * 2
    return c * 1 if c.is_contiguous() else c * 3


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("fn", [branch_on_is_contiguous, contiguous_idiom_then_write, branch_on_dim_order,
                                branch_on_a_result])
def test_a_layout_query_takes_eagers_branch_or_is_refused(fn, schedule):
    jitted = fusion_alias.jit(fn, backend="reference", schedule=schedule)
    for name, make in list(_layouts().items()) + [("contiguous again", _layouts()["contiguous"])]:
        a_e, a_j = make(), make()
        want = fn(a_e)
        try:
            got = jitted(a_j)
        except LayoutQueryError as e:
            assert name not in ("contiguous", "contiguous again"), e  # the contiguous answer is Thunder's own
            assert "not supported" in str(e)
            continue
        torch.testing.assert_close(got, want, msg=name)
        torch.testing.assert_close(a_j, a_e, msg=name)


def test_channels_last_query_of_a_channels_last_input_is_refused():
    def f(a):
        return a * 2 if a.is_contiguous(memory_format=torch.channels_last) else a * 3

    x = torch.randn(1, 2, 3, 3).to(memory_format=torch.channels_last)
    with pytest.raises(LayoutQueryError, match=r"is_contiguous\(\) of a is True in eager"):
        fusion_alias.jit(f, backend="reference")(x)


def test_data_ptr_is_refused():
    def f(a, b):
        return a * 2 if a.data_ptr() == b.data_ptr() else a * 3

    x = torch.randn(3)
    assert torch.equal(f(x, x.clone()), x * 3)
    with pytest.raises(LayoutQueryError, match=r"data_ptr\(\)"):
        fusion_alias.jit(f, backend="reference")(x, x.clone())


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_is_set_to_of_inputs_follows_the_call(schedule):
    def f(a, b):
        return a * 2 if a.is_set_to(b) else a * 3

    jitted = fusion_alias.jit(f, backend="reference", schedule=schedule)
    x = _ramp(4, 4)
    torch.testing.assert_close(jitted(x, x.clone()), x * 3)
    torch.testing.assert_close(jitted(x, x.t()), x * 3)
    with pytest.raises(LayoutQueryError, match=r"is_set_to\(\) of a is True in eager"):
        jitted(x, x)


def _view_on_the_contiguous_branch_then_write(a):
    return a.mul_(2).view(-1) if a.is_contiguous() else a.mul_(3).reshape(-1)


@pytest.mark.parametrize("view", [lambda x: x.reshape(6, 4).t(), lambda x: x.reshape(4, 6)[:, 1:4]],
                         ids=["transposed", "column_slice"])
def test_a_query_is_refused_before_the_layout_of_the_branch_eager_never_takes(view):
    # session 19 probe: in a call that computes gradients and writes in place, the functionalization checked
    # the traced branch's view(-1) first, and refused it as "eager PyTorch rejects this too", where eager
    # takes the other branch; now the query is refused first, as without gradients
    w = _ramp(24).requires_grad_()
    _view_on_the_contiguous_branch_then_write(view(w * 1)).sum().backward()  # eager runs it
    w = _ramp(24).requires_grad_()
    with pytest.raises(LayoutQueryError, match="is_contiguous"):
        fusion_alias.jit(_view_on_the_contiguous_branch_then_write, backend="reference")(view(w * 1))
