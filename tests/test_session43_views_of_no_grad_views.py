"""Session 43: a view taken under grad mode of a view made under ``torch.no_grad()`` starts no backward into the
memory it shares (saved_versions.py: ``made_without_grad``).

Fuzz calls ``--grad`` seed 35060 #26: ``t0.mul_(t0.detach())`` saves ``t0``'s memory and writes it, which eager
raises for only when ``mul_``'s backward runs. The program returns ``t3 = t2[0:1]`` of ``with torch.no_grad(): t2 =
t0[::2]``: eager's ``t3`` has a ``grad_fn`` that ends at ``t2``, which has no history, so ``mul_``'s backward never
runs and eager returns. fusion_alias took ``t3`` for a gradient into ``t0``'s memory and refused the call saying
eager raises at backward. Checked against eager on fresh inputs: values, mutated inputs, leaf gradients and
``requires_grad`` flags on every reference schedule, first and cached call; the view made under no_grad returned
itself, and a read that does reach ``mul_``'s backward, still refused.
"""

import pytest
import torch

import fusion_alias
from tests.grad_helpers import assert_runs_like_eager, assert_same_nested


def _one_input_twice():
    leaf = (torch.arange(16.0).reshape(4, 4) / 16 - 0.4).requires_grad_()
    x = leaf * 1
    return [leaf], [x, x]


def _two_inputs():
    la = (torch.arange(16.0).reshape(4, 4) / 16 - 0.4).requires_grad_()
    lb = (torch.arange(16.0).reshape(4, 4) / 8 + 0.1).requires_grad_()
    return [la, lb], [la * 1, lb * 1]


def fuzz_35060_26(a, b):
    b.add_(2.0)
    t0 = b.mean(0)
    t0[[0, 2]] = 2.0
    t0.mul_(t0.detach())
    t1 = a[2]
    with torch.no_grad():
        t2 = t0[::2]
    t3 = t2[0:1]
    return t1, a, t3


def view_of_a_no_grad_view(a, b):
    t0 = b.mean(0)
    t0.mul_(t0.detach())
    with torch.no_grad():
        t2 = t0[::2]
    return a * 2, t2[0:1].reshape(1), t2.t() if t2.dim() > 1 else t2.unsqueeze(0)


def the_no_grad_view_itself(a, b):
    t0 = b.exp()
    t0.mul_(2)
    with torch.no_grad():
        t2 = t0[1:]
    return a * 2, t2


def _run(fn, make):
    leaves, args = make()
    outs = fn(*args)
    weights = torch.Generator().manual_seed(1)
    sum((o * torch.rand(o.shape, generator=weights)).sum() for o in outs if o.requires_grad).backward()
    return ([o.detach().clone() for o in outs], [a.detach().clone() for a in args], [o.requires_grad for o in outs],
            [leaf.grad for leaf in leaves])


def _same_with_none_as_zeros(got, want, where=""):
    """Values, mutated inputs and flags as eager's; a leaf gradient of zeros where eager's is None is the known
    difference of docs/limits.md (a written input that requires grad and does not reach the loss)."""
    assert_same_nested(got[:3], want[:3], where)
    for g, w in zip(got[3], want[3]):
        if w is None:
            assert g is None or not bool(g.ne(0).any()), (where, g)
        else:
            torch.testing.assert_close(g, w, msg=lambda m: f"{where}: {m}")


@pytest.mark.parametrize("fn", [fuzz_35060_26, view_of_a_no_grad_view, the_no_grad_view_itself],
                         ids=lambda f: f.__name__)
@pytest.mark.parametrize("make", [_one_input_twice, _two_inputs], ids=["aliased", "apart"])
def test_matches_eager(fn, make):
    assert_runs_like_eager(fn, _run, make, compare=_same_with_none_as_zeros)


def test_a_read_that_reaches_the_save_is_still_refused():
    def reaches(a, b):
        t0 = b.mean(0)
        t0.mul_(t0.detach())
        with torch.no_grad():
            t2 = t0[::2]
        return a * 2, t2[0:1], t0 * 1  # t0 * 1: mul_'s backward runs, its saved operand was written

    leaves, args = _two_inputs()
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        sum(o.sum() for o in reaches(*args)).backward()
    with pytest.raises(fusion_alias.AliasInputError, match="saves"):
        fusion_alias.jit(reaches, backend="reference")(*_two_inputs()[1])
