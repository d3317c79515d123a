"""Eager's autograd rejections of in-place writes, in calls that compute gradients
(``fusion_alias/refusals/saved_versions.py``): each program eager rejects is refused with a clear
error, each eager-valid neighbour runs and matches eager on every schedule, and the table of what each
op saves for the backward is re-derived in eager."""

import itertools

import pytest
import torch
import torch.nn.functional as F

import fusion_alias
from fusion_alias import AliasInputError
from fusion_alias.backends.reference import SCHEDULES
from fusion_alias.refusals.saved_versions import SAVED_FOR_BACKWARD

from grad_helpers import assert_matches_eager


def _rnd(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


# ---- programs eager rejects (hostile11's missed rejections, small)

def _exp_then_div_(s):  # T25: exp saves its result
    e = (s - s.amax(-1, keepdim=True)).exp()
    e.div_(e.sum(-1, keepdim=True))
    return e


def _logits_sub_amax_(x, w):  # T26: amax saves its input
    logits = x @ w
    logits.sub_(logits.amax(-1, keepdim=True))
    return logits.exp().sum(-1)


def _relu_then_mul_(x, w):  # relu_ saves its result
    y = torch.relu_(x @ w)
    y.mul_(2)
    return y


def _relu_inplace_then_slice_mul_(x, w):  # T38: nn.ReLU(inplace=True), then a write into its result
    h = F.relu(x @ w, inplace=True)
    h[:, :2].mul_(0.5)
    return h


def _layer_norm_then_residual_(x, w, b):  # T38/T38b: layer_norm saves x, x += ... writes it
    x = x.clone()
    x += F.layer_norm(x, (4,), w, b)
    return x


def _nograd_update_of_saved_param(w, g):  # T06: w * w saves w; the no_grad step bumps its version
    y = (w * w).sum()
    with torch.no_grad():
        w.sub_(0.1 * g)
    return y


def _kv_cache_write_after_attend(x, wk, q, kc):  # T19: einsum saved a view of the cache
    kc[:, 0] = x @ wk
    att = torch.einsum("btd,bd->bt", kc[:, :1], q)
    kc[:, 1] = (x @ wk) * 2
    return att


def _mul_self_(x):  # x.mul_(x): mul saves its operand, then writes it
    h = x * 1
    h.mul_(h)
    return h


def _unbind_write(x, w):  # T55
    h = x @ w
    r0, r1, r2 = h.unbind(0)
    r1.mul_(2)
    return h


def _chunk_write(x, w):
    h = x @ w
    a, b = h.chunk(2, 1)
    a.add_(1)
    return h


def _split_view_write(x, w):
    h = x @ w
    a, b = h.split([1, 2], 0)
    a[0].zero_()
    return h


def _four(n=4, m=4, grad=True):
    def make():
        x = _rnd(3, n, seed=1).requires_grad_(grad)
        w = _rnd(n, m, seed=2).requires_grad_(grad)
        return [p for p in (x, w) if grad], [x, w]
    return make


def _layer_norm_inputs(grad=True):
    def make():
        x, w, b = _rnd(3, 4, seed=1), _rnd(4, seed=2), _rnd(4, seed=3)
        leaves = [t.requires_grad_(grad) for t in (x, w, b)]
        return (leaves if grad else []), [x, w, b]
    return make


def _param_inputs(grad=True):
    def make():
        w = _rnd(3, 3, seed=1).requires_grad_(grad)
        return ([w] if grad else []), [w, _rnd(3, 3, seed=2)]
    return make


def _kv_inputs(grad=True):
    def make():
        x, wk, q = _rnd(2, 4, seed=1), _rnd(4, 4, seed=2), _rnd(2, 4, seed=3)
        leaves = [t.requires_grad_(grad) for t in (x, wk, q)]
        return (leaves if grad else []), [x, wk, q, torch.zeros(2, 3, 4)]
    return make


def _one(grad=True):
    def make():
        x = _rnd(3, 5, seed=1).requires_grad_(grad)
        return ([x] if grad else []), [x]
    return make


REJECTED = [
    (_exp_then_div_, _one, "exp saves"),
    (_logits_sub_amax_, _four, "amax saves"),
    (_relu_then_mul_, _four, "relu_ saves"),
    (_relu_inplace_then_slice_mul_, _four, "relu_ saves"),
    (_layer_norm_then_residual_, _layer_norm_inputs, "layer_norm saves"),
    (_nograd_update_of_saved_param, _param_inputs, "mul saves"),
    (_kv_cache_write_after_attend, _kv_inputs, "einsum saves"),
    (_mul_self_, _one, "mul_ saves"),
    (_unbind_write, _four, "returns several views"),
    (_chunk_write, _four, "returns several views"),
    (_split_view_write, _four, "returns several views"),
]
IDS = [f.__name__.strip("_") for f, _, _ in REJECTED]


def _eager_raises(fn, make):
    leaves, args = make()
    with pytest.raises(RuntimeError):
        out = fn(*args)
        out.sum().backward()


@pytest.mark.parametrize("fn, make, says", REJECTED, ids=IDS)
def test_refused_where_eager_raises(fn, make, says):
    _eager_raises(fn, make())
    for schedule in SCHEDULES:
        jitted = fusion_alias.jit(fn, backend="reference", schedule=schedule)
        _, args = make()()
        with pytest.raises(AliasInputError, match=says) as err:
            jitted(*args)
        assert "Eager PyTorch raises" in str(err.value) and "clone" in str(err.value)


@pytest.mark.parametrize("fn, make, says", REJECTED, ids=IDS)
def test_the_same_programs_without_gradients_run(fn, make, says):
    assert_matches_eager(fn, make(grad=False))
