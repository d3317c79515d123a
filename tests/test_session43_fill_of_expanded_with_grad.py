"""Session 43: ``b.zero_()`` (``fill_``) of an ``expand()``ed input is refused in the same words with and without
gradients (refusals/writes.py, ``_unjoined``).

Eager writes each memory location once there; fusion_alias does not support it ("Eager PyTorch accepts it"). In a
call that computes gradients the fill is traced through overwrite_gradients.py's join, which the check did not
read as a fill, so the refusal said eager rejects the write too, which it does not (fuzz seed 35060 #41, calls
--grad).
"""

import pytest
import torch

import fusion_alias


def prog(a, b, c):
    a[[3]] = -1.5
    t0 = c.view(1, 1)
    b.zero_()
    return (t0,)


def fill(a, b, c):
    b.fill_(2.0)
    return a * c


@pytest.mark.parametrize("fn", [prog, fill], ids=lambda f: f.__name__)
@pytest.mark.parametrize("grad", [False, True], ids=["no_grad_inputs", "grad_inputs"])
def test_refused_saying_eager_accepts_it(fn, grad):
    def inputs():
        l0 = torch.rand(4, 4, requires_grad=grad)
        l1 = torch.rand(4, 4, requires_grad=grad)
        x0, x1 = l0 * 1, l1 * 1
        return x0, x0[1].expand(4, 4), x1[1, 2]

    fn(*inputs())  # eager runs it
    with pytest.raises(fusion_alias.AliasInputError, match=r"fill_/zero_ into input b, whose elements overlap each "
                                                           r"other .* Eager PyTorch accepts it"):
        fusion_alias.jit(fn, backend="reference")(*inputs())
