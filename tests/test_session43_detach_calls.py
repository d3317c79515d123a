"""Session 43: each ``detach()`` call is a tensor of its own for autograd (live_backward.py, Note [one detach, one
tensor]).

Fuzz calls ``--grad`` seed 35057 #41: a write with a gradient into one ``t0.detach()`` made the walk think another
``t0.detach()[1::2]``, returned, carried a gradient into ``t0``'s memory, so ``exp``'s save of ``t0`` counted as
live and the call was refused saying eager raises at backward; eager runs it. The write itself is still not
supported (leaf_views.py, Note [reads through detach, after writes]), so the call is refused for that, in those
words; the same program writing a detached value runs as eager does.
"""

import pytest
import torch

import fusion_alias
from tests.grad_helpers import assert_matches_eager_with_flags


def _inputs():
    g = torch.Generator().manual_seed(0)
    la = (torch.rand(4, 4, generator=g) * 2 - 1).requires_grad_()
    lb = (torch.rand(4, 4, generator=g) * 2 - 1).requires_grad_()
    return [la, lb], [la * 1, lb * 1]


def _program(write_detached: bool):
    def prog(a, b):
        t0 = b.exp()
        t0.mul_(t0)
        t0.fill_(a[0, 0])
        t1 = a[3:, 1]
        t2 = t0.detach()[1::2]
        t1.hypot_((t1 > 0).float().sigmoid())
        t3 = a[:, [0, 3, 2, 1]].sin() * 0.5
        t0.detach().copy_(t1.detach() if write_detached else t1)
        return b, t3, t2

    return prog


fuzz_35057_41 = _program(write_detached=False)
detached_value_written = _program(write_detached=True)


def test_eager_runs_the_fuzz_program():
    leaves, args = _inputs()
    outs = fuzz_35057_41(*args)
    assert [o.requires_grad for o in outs] == [True, True, False]
    sum(o.sum() for o in outs if o.requires_grad).backward()
    assert all(leaf.grad is not None for leaf in leaves)


def test_the_refusal_names_the_write_not_an_eager_error():
    with pytest.raises(fusion_alias.AliasInputError) as raised:
        fusion_alias.jit(fuzz_35057_41, backend="reference")(*_inputs()[1])
    message = str(raised.value)
    assert "a tensor made by detach()" in message and "not supported" in message
    assert "Eager PyTorch raises" not in message


def test_writing_a_detached_value_matches_eager():
    assert_matches_eager_with_flags(detached_value_written, _inputs)
