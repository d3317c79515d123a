"""Programs eager accepts that fusion_alias refused with gradients for a wrong reason (issue 13).

Each compares values, mutated inputs and gradients with eager on every reference schedule.
"""

from __future__ import annotations

import pytest
import thunder
import torch
import torch.nn.functional as F

import fusion_alias
from tests.grad_helpers import assert_matches_eager


def linear_relu_inplace_linear(x, w1, w2):
    h = F.linear(x, w1)
    F.relu(h, inplace=True)
    return F.linear(h, w2)


def _mlp_inputs():
    g = torch.Generator().manual_seed(0)
    leaves = [torch.randn(*s, generator=g).requires_grad_() for s in ((2, 4), (5, 4), (3, 5))]
    return leaves, list(leaves)


def test_linear_relu_inplace_linear_runs_with_eager_gradients():
    # the backward's reshape of relu_'s result is made after the write: no view at write time
    assert_matches_eager(linear_relu_inplace_linear, _mlp_inputs)


def view_after_write_returned(a):
    c = a * 2
    c.add_(1)
    return c, c[0]


def test_view_made_after_the_write_runs():
    def make():
        w = torch.linspace(-1, 1, 6).reshape(2, 3).requires_grad_()
        return [w], [w * 1]

    assert_matches_eager(view_after_write_returned, make)


def view_before_write_is_still_refused(a):
    c = a * 2
    v = c[0]
    c.add_(1)
    return v * 1


def test_view_made_before_the_write_matches_eager():
    # was refused (Thunder 0.2.6's autodiff gets it wrong); functionalized, the view reads the write
    def make():
        w = torch.linspace(-1, 1, 6).reshape(2, 3).requires_grad_()
        return [w], [w * 1]

    assert_matches_eager(view_before_write_is_still_refused, make)


def embedding_then_write(idx, w):
    x = F.embedding(idx, w)
    x += 1
    return x * 2


@pytest.mark.parametrize("idx", [[0, 2, 2], [[0, 1], [3, 3]]])
def test_write_into_an_embedding_output_runs(idx):
    # a 2-d index decomposes into reshape(take(w, ...)): a view of a fresh value, not of w
    def make():
        w = torch.linspace(-1, 1, 12).reshape(4, 3).requires_grad_()
        return [w], [torch.tensor(idx), w]

    assert_matches_eager(embedding_then_write, make)


def test_embedding_module_with_inplace_add_runs():
    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = torch.nn.Embedding(10, 3)
            self.lin = torch.nn.Linear(3, 2)

        def forward(self, idx):
            x = self.emb(idx)
            x += 1
            return self.lin(x)

    idx = torch.tensor([[1, 2], [3, 3]])
    torch.manual_seed(0)
    eager = Model()
    torch.manual_seed(0)
    model = Model()
    jitted = fusion_alias.jit(model, backend="reference")
    want, got = eager(idx), jitted(idx)
    torch.testing.assert_close(got, want)
    want.sum().backward()
    got.sum().backward()
    for p_e, p_j in zip(eager.parameters(), model.parameters()):
        torch.testing.assert_close(p_j.grad, p_e.grad)


def sgd_step_under_no_grad(p, g):
    with torch.no_grad():
        p.sub_(g * 0.1)
    return p * g


def test_no_grad_write_into_a_leaf_matches_eager():
    # eager accepts it (the program's grad mode is off at the write) and p keeps its gradient path;
    # plain thunder.jit loses p's gradient here (checked below); functionalized, it matches eager
    p, g = torch.randn(3, requires_grad=True), torch.randn(3, requires_grad=True)
    sgd_step_under_no_grad(p, g).sum().backward()  # eager: fine
    assert p.grad is not None
    p2, g2 = torch.randn(3, requires_grad=True), torch.randn(3, requires_grad=True)
    thunder.jit(sgd_step_under_no_grad)(p2, g2).sum().backward()
    assert p2.grad is None  # Thunder 0.2.6 drops it

    def make():
        gen = torch.Generator().manual_seed(0)
        p, g = torch.randn(3, generator=gen).requires_grad_(), torch.randn(3, generator=gen).requires_grad_()
        return [p, g], [p, g]

    assert_matches_eager(sgd_step_under_no_grad, make)


def leaf_write_with_grad(p):
    p.add_(1)
    return p * 2


def test_leaf_write_under_grad_mode_keeps_eagers_message():
    with pytest.raises(fusion_alias.AliasInputError, match="leaf Variable"):
        fusion_alias.jit(leaf_write_with_grad, backend="reference")(torch.ones(3, requires_grad=True))
