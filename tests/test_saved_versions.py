"""Eager's autograd rejections of in-place writes, in calls that compute gradients
(``fusion_alias/refusals/saved_versions.py``): each program eager rejects is refused with a clear
error, each eager-valid neighbour runs and matches eager on every schedule, and the table of what each
op saves for the backward is re-derived in eager."""

import inspect
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


def _addcmul_self_(x):  # x.addcmul_(x, x): addcmul saves its two operands, then writes them (fuzz, session 16)
    h = x * 1
    h.addcmul_(h, h, value=0.5)
    return h


def _detached_conj_then_written_with_grad(x, w):  # conj of a real tensor is the detached tensor itself
    h = x @ w
    t0 = h.amax(-1)
    d = t0.detach().conj()
    h.clamp_max_(0.1)
    d.copy_(t0 * 2)
    return d


def _abs_conj_of_written_input(x, w):  # not detached: conj's result carries abs's gradient
    h = x @ w
    t2 = h.abs().conj()
    h[1::2] = 1.5
    return t2 * 2


def _detached_then_written_with_grad(x, w):  # d carries t0's gradient after the copy: amax's backward runs
    h = x @ w
    t0 = h.amax(-1)
    d = t0.detach()
    h.clamp_max_(0.1)
    d.copy_(t0 * 2)
    return d


def _sigmoid_then_self_copy_read(x):  # hostile14: the copy's result, renamed away by flattening, is read
    h = x.sigmoid()
    return h.copy_(h) * 1


def _self_copy_of_unsaved_read(x):  # eager-valid neighbour: x * 2 saves nothing of h
    h = x * 2
    return h.copy_(h) * 1


def _leaky_relu_elu_inplace(x, w):  # hostile13 M20: nn.LeakyReLU(inplace=True) then nn.ELU(inplace=True)
    h = F.leaky_relu(x @ w, 0.1, inplace=True)  # saves its result
    return F.elu(h, inplace=True)


def _leaky_relu_then_residual_(x, w):  # leaky_relu saves its input, += writes it
    h = x @ w
    y = F.leaky_relu(h, 0.1)
    h += 1
    return y


def _logsumexp_then_write_(x, w):  # logsumexp saves its input and result
    h = x @ w
    lse = torch.logsumexp(h, -1, keepdim=True)
    h.sub_(1)
    return lse


def _norm_then_write_(x, w):  # norm saves its input and result (a clip-by-norm, then an in-place scale)
    h = x @ w
    n = h.norm(dim=-1, keepdim=True)
    h.mul_(0.5)
    return n


def _rms_norm_then_residual_(x, w):  # rms_norm saves its input
    h = x @ w
    y = F.rms_norm(h, (4,))
    h += 1
    return y


def _batch_norm_then_residual_(x, w, b, rm, rv):  # hostile13 M14: batch_norm saves its input
    h = x * 1
    y = F.batch_norm(h, rm, rv, w, b, True)
    h += 1
    return y


def _running_mean_written_after_batch_norm(x, w, b, rm, rv):  # batch_norm saves running_mean
    y = F.batch_norm(x * 1, rm, rv, w, b, True)
    rm.zero_()
    return y


def _layer_norm_4d_then_write_(x, w, b, rm, rv):  # layer_norm without weight saves its input
    h = x * 2
    y = F.layer_norm(h, (3,))
    h.mul_(0.5)
    return y


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


def _norm_inputs(grad=True):
    def make():
        x, w, b = _rnd(2, 4, 3, seed=1), _rnd(4, seed=2), _rnd(4, seed=3)
        leaves = [t.requires_grad_(grad) for t in (x, w, b)]
        return (leaves if grad else []), [x, w, b, torch.zeros(4), torch.ones(4)]
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
    (_leaky_relu_elu_inplace, _four, "leaky_relu_ saves"),
    (_leaky_relu_then_residual_, _four, "leaky_relu saves"),
    (_logsumexp_then_write_, _four, "logsumexp saves"),
    (_norm_then_write_, _four, "norm saves"),
    (_rms_norm_then_residual_, _four, "rms_norm saves"),
    (_batch_norm_then_residual_, _norm_inputs, "batch_norm saves"),
    (_layer_norm_4d_then_write_, _norm_inputs, "layer_norm saves"),
    (_running_mean_written_after_batch_norm, _norm_inputs, "batch_norm saves"),
    (_unbind_write, _four, "returns several views"),
    (_chunk_write, _four, "returns several views"),
    (_split_view_write, _four, "returns several views"),
    (_sigmoid_then_self_copy_read, _one, "sigmoid saves"),
    (_addcmul_self_, _one, "addcmul_ saves"),
    (_detached_then_written_with_grad, _four, "amax saves"),
    (_detached_conj_then_written_with_grad, _four, "amax saves"),
    (_abs_conj_of_written_input, _four, "abs saves"),
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


# ---- eager-valid neighbours: each runs and matches eager (outputs, mutated inputs, gradients)

def _add_saves_nothing(x):
    h = x * 1
    y = h + 1
    h.add_(1)
    return y, h


def _mul_by_number_saves_nothing(x):
    h = x * 2
    h.add_(1)
    return h


def _exp_clone_first(s):
    e = s.exp().clone()
    e.div_(e.sum(-1, keepdim=True))
    return e


def _exp_out_of_place(s):
    e = s.exp()
    return e / e.sum(-1, keepdim=True)


def _exp_backward_never_runs(s):
    e = s.exp()
    e.add_(1)
    return s * 2


def _exp_result_not_differentiable(s):
    e = s.exp()
    m = e > 1.5
    e.add_(1)
    return torch.where(m, s, s * 2)


def _write_before_the_save(x, w):  # T38b's order: the write comes before relu_ saves
    h = x @ w
    h[:, :2].mul_(0.5)
    torch.relu_(h)
    return h


def _tanh_saved_then_sin_of_other(x, w):  # a write into memory nothing saved
    h = x @ w
    t = h.tanh()
    g = (x * 1)
    g.add_(1)
    return t, g


def _sigmoid_result_saved_h_written(x, w):  # hostile11 T37: sigmoid saved s, not h
    h = x @ w
    s = torch.sigmoid(h)
    h.mul_(s)
    return h


def _nograd_update_of_unsaved_param(w, g):  # add saves nothing
    y = (w + 1).sum()
    with torch.no_grad():
        w.sub_(0.1 * g)
    return y


def _kv_cache_clone_reads(x, wk, q, kc):  # T19b
    kc[:, 0] = x @ wk
    att = torch.einsum("btd,bd->bt", kc[:, :1].clone(), q)
    kc[:, 1] = (x @ wk) * 2
    return att


def _unbind_clone_write(x, w):
    h = x @ w
    r0, r1, r2 = h.unbind(0)
    r1 = r1.clone()
    r1.mul_(2)
    return h, r1


def _unbind_nograd_write(x, w):
    h = x @ w
    r0, r1, r2 = h.unbind(0)
    with torch.no_grad():
        r1.mul_(2)
    return h


def _tensor_split_write(x, w):  # tensor_split's outputs may be written (checked in eager)
    h = x @ w
    a, b = h.tensor_split(2, 1)
    a.add_(1)
    return h


def _hardtanh_inplace_then_write(x, w):  # hardtanh_ saves nothing eager checks (unlike hardtanh)
    h = F.hardtanh(x @ w, inplace=True)
    h.mul_(2)
    return h


def _leaky_relu_inplace_then_linear(x, w):  # nn.Sequential(Linear, LeakyReLU(inplace=True), Linear)
    return F.leaky_relu(x @ w, 0.1, inplace=True) @ w


def _functional_leaky_relu_elu_(x, w):  # F.leaky_relu_ / F.elu_ save their results, not their inputs
    h = x @ w
    F.leaky_relu_(h, 0.1)
    return F.elu_(h * 2) @ w


def _select_write(x, w):  # a plain view
    h = x @ w
    h[1].mul_(2)
    return h


def _exp_then_batch_norm(x, w, b, rm, rv):  # batch_norm writes its running stats, not its input
    h = x.exp()
    return F.batch_norm(h, rm, rv, w, b, True) * h


def _write_then_batch_norm(x, w, b, rm, rv):
    h = x * 1
    h += 1
    return F.batch_norm(h, rm, rv, w, b, True)


def _batch_norm_of_clone_then_write(x, w, b, rm, rv):
    h = x * 1
    y = F.batch_norm(h.clone(), rm, rv, w, b, True)
    h += 1
    return y, h


def _batch_norm_eval_then_write_not_differentiated(x, w, b, rm, rv):  # its backward never runs
    h = x * 1
    F.batch_norm(h, rm, rv, w, b, False)
    h += 1
    return h


def _batch_norm_twice_on_the_same_stats(x, w, b, rm, rv):  # its running-stat update bumps no version
    return F.batch_norm(F.batch_norm(x, rm, rv, w, b, True) * 2, rm, rv, w, b, True)


def _amax_read_through_detach(x, w):  # fuzz seed 20491 #22: amax's result is read only detached
    h = x @ w
    t0 = h.amax(-1)
    t1 = t0.detach()[0:2]
    h.clamp_max_(0.1)
    return t1.unsqueeze(0), h * 2


def _abs_saved_written_then_detached(x, w):  # fuzz seed 20492 #124: only detach reads the written h
    h = x @ w
    t0 = h.sum(0)  # read before the write
    h.mul_(h.abs() + 1)  # abs saved h, written here
    d = h.detach().squeeze(0)
    return t0, d.neg_()  # (the in-place result names the detached memory too)


# fuzz seed 20784 #36 (dtype --grad): abs's result reaches the return only through ops of its detached
# tensor (Note [a result computed from no gradient starts no backward], refusals/saved_versions.py)
def _abs_read_through_detach_conj(x, w):
    h = x @ w
    t2 = h.abs()
    h[1::2] = 1.5
    return t2.detach().conj().view(1, -1, 1) / 2, h * 2


def _abs_read_through_ops_of_a_detach(x, w):  # an op of the detached tensor, then a view of its result
    h = x @ w
    t2 = torch.div(h, h.abs() + 1, rounding_mode="trunc")
    h[0] = 1.5
    t3 = (t2.detach().contiguous() + 1).t()
    return t3 * 2, h * 2


def _amax_read_through_type_as_of_a_detach(x, w):
    h = x @ w
    t0 = h.amax(-1, keepdim=True)
    t1 = t0.detach().type_as(h)
    h.clamp_max_(0.1)
    return t1.expand(3, 4) * h, h


def _amax_read_only_for_its_shape(x, w):  # zeros_like and expand_as take no gradient from their model
    h = x @ w
    t0 = h.amax(-1, keepdim=True)
    z = torch.zeros_like(t0) + torch.ones(3, 1).expand_as(t0)
    h.clamp_max_(0.1)
    return z * h, h


NEIGHBOURS = [
    (_amax_read_through_detach, _four),
    (_abs_read_through_detach_conj, _four),
    (_abs_read_through_ops_of_a_detach, _four),
    (_amax_read_through_type_as_of_a_detach, _four),
    (_amax_read_only_for_its_shape, _four),
    (_abs_saved_written_then_detached, _four),
    (_add_saves_nothing, _one),
    (_self_copy_of_unsaved_read, _one),
    (_mul_by_number_saves_nothing, _one),
    (_exp_clone_first, _one),
    (_exp_out_of_place, _one),
    (_exp_backward_never_runs, _one),
    (_exp_result_not_differentiable, _one),
    (_write_before_the_save, _four),
    (_tanh_saved_then_sin_of_other, _four),
    (_sigmoid_result_saved_h_written, _four),
    (_nograd_update_of_unsaved_param, _param_inputs),
    (_kv_cache_clone_reads, _kv_inputs),
    (_unbind_clone_write, _four),
    (_unbind_nograd_write, _four),
    (_tensor_split_write, _four),
    (_select_write, _four),
    (_hardtanh_inplace_then_write, _four),
    (_leaky_relu_inplace_then_linear, _four),
    (_functional_leaky_relu_elu_, _four),
    (_exp_then_batch_norm, _norm_inputs),
    (_write_then_batch_norm, _norm_inputs),
    (_batch_norm_of_clone_then_write, _norm_inputs),
    (_batch_norm_eval_then_write_not_differentiated, _norm_inputs),
    (_batch_norm_twice_on_the_same_stats, _norm_inputs),
]


@pytest.mark.parametrize("fn, make", NEIGHBOURS, ids=[f.__name__.strip("_") for f, _ in NEIGHBOURS])
def test_eager_valid_neighbours_run(fn, make):
    assert_matches_eager(fn, make())


# ---- the table, re-derived in eager

def _eager_op(name, positions, ranks):
    """(eager function over the tensor arguments, their shapes) for a table key."""
    unary = {
        "_softmax": lambda x: torch.softmax(x, -1), "log_softmax": lambda x: torch.log_softmax(x, -1),
        "amax": lambda x: x.amax(-1, True), "amin": lambda x: x.amin(-1, True),
        "sum": lambda x: x.sum(-1), "mean": lambda x: x.mean(-1), "var": lambda x: x.var(-1),
        "pow": lambda x: x ** 2, "clamp": lambda x: x.clamp(-0.5, 0.5), "mul": lambda x: x * 2,
        "div": lambda x: x / 2, "add": lambda x: x + 1, "sub": lambda x: x - 1, "gelu": F.gelu, "silu": F.silu, "softplus": F.softplus,
        "leaky_relu": lambda x: F.leaky_relu(x, 0.1), "elu": F.elu, "hardtanh": F.hardtanh, "mish": F.mish,
        "hardswish": F.hardswish, "logsumexp": lambda x: torch.logsumexp(x, -1),
        "prod": lambda x: x.prod(-1), "cumprod": lambda x: x.cumprod(-1), "norm": lambda x: x.norm(dim=-1),
        "rms_norm": lambda x: F.rms_norm(x, (4,)),
        "leaky_relu_": lambda x: F.leaky_relu(x, 0.1, inplace=True), "elu_": lambda x: F.elu(x, inplace=True),
        "logsigmoid": F.logsigmoid, "hardsigmoid": F.hardsigmoid, "selu": F.selu, "celu": F.celu, "relu6": F.relu6,
    }
    unary.update({  # (session 41's entries)
        "std": lambda x: x.std(-1), "median": lambda x: x.median(), "nanmedian": lambda x: x.nanmedian(),
        "logcumsumexp": lambda x: x.logcumsumexp(-1), "torch_max": lambda x: x.max(),
        "normalize": lambda x: F.normalize(x, dim=-1), "renorm": lambda x: x.renorm(2, 0, 1.0), "softsign": F.softsign,
        "cummax": lambda x: x.cummax(-1).values, "cummin": lambda x: x.cummin(-1).values,
        "var_mean": lambda x: torch.var_mean(x, -1)[0], "softshrink": F.softshrink, "hardshrink": F.hardshrink,
        "glu": F.glu, "threshold": lambda x: F.threshold(x, 0.1, 0.0), "rrelu": lambda x: F.rrelu(x, training=False),
        "vector_norm": lambda x: torch.linalg.vector_norm(x, dim=-1),
    })
    unary.update({  # (session 46's entries: in-place forms whose result is saved)
        "celu_": lambda x: F.celu(x, inplace=True), "selu_": lambda x: F.selu(x, inplace=True),
        "rrelu_": lambda x: F.rrelu(x, training=False, inplace=True), "copysign_": lambda x: x.copysign_(-1.0),
        "copysign": lambda x: torch.copysign(x, 0.5), "xlogy": lambda x: torch.xlogy(x, 0.5),
    })
    others = {
        ("gather", (0, 2)): (lambda x: torch.gather(x, 1, torch.tensor([[0, 1, 0], [1, 1, 0], [2, 0, 1]])), [(3, 4)]),
        ("pow", (1,)): (lambda x: 2 ** x, [(3, 4)]),
        ("mse_loss", (0, 1)): (F.mse_loss, [(3, 4), (3, 4)]), ("torch_max", (0, 1)): (torch.max, [(3, 4), (3, 4)]),
        ("outer", (0, 1)): (torch.outer, [(3,), (4,)]), ("ger", (0, 1)): (torch.ger, [(3,), (4,)]),
        ("cross", (0, 1)): (lambda a, b: torch.cross(a, b, dim=-1), [(4, 3), (4, 3)]),
        ("lerp", (0, 1, 2)): (torch.lerp, [(3, 4)] * 3),
        ("polygamma", (1,)): (lambda x: torch.polygamma(1, x), [(3, 4)]),
        ("inverse", (0,)): (torch.inverse, [(4, 4)]), ("pinverse", (0,)): (torch.pinverse, [(3, 4)]),
        # (session 46's sweep; a factorization's operand made positive definite by an add, which saves nothing)
        ("_softmin", (0,)): (lambda x: F.softmin(x, 1), [(3, 4)]), ("pdist", (0,)): (F.pdist, [(3, 4)]),
        ("cholesky", (0,)): (lambda x: torch.linalg.cholesky(x + 10 * torch.eye(4, dtype=x.dtype)), [(4, 4)]),
        ("cholesky_inverse", (0,)): (lambda x: torch.cholesky_inverse(x + 10 * torch.eye(4, dtype=x.dtype)), [(4, 4)]),
        **{(n, (0,)): (getattr(torch.special, n), [(3, 4)]) for n in ("erfcx", "i0e", "i1", "i1e", "log_ndtr", "ndtri")},
        **{(n, (0,)): (getattr(torch.linalg, n), [(4, 4)]) for n in ("det", "eigvalsh", "inv", "matrix_norm", "svdvals")},
        ("pinv", (0,)): (torch.linalg.pinv, [(3, 4)]), ("norm_except_dim", (0,)): (torch.norm_except_dim, [(3, 4)]),
        ("softmax", (0,)): (lambda x: torch.special.softmax(x, 1), [(3, 4)]),
        # (functions with several results: "out", "out1", ... name each)
        **{(n, (0,)): (getattr(torch.linalg, n), [(4, 4)]) for n in ("eigh", "qr", "slogdet", "lu_factor", "lu_factor_ex", "inv_ex")},
        ("svd", (0,)): (lambda x: torch.linalg.svd(x, full_matrices=False), [(3, 4)]),
        ("cholesky_ex", (0,)): (lambda x: torch.linalg.cholesky_ex(x + 10 * torch.eye(4, dtype=x.dtype)), [(4, 4)]),
        ("std_mean", (0,)): (lambda x: torch.std_mean(x, -1), [(3, 4)]),
        ("tensorinv", (0,)): (lambda x: torch.linalg.tensorinv(x, 1), [(4, 4)]),
        ("avg_pool1d", (0,)): (lambda x: F.avg_pool1d(x, 1), [(3, 4)]), ("max_pool1d", (0,)): (lambda x: F.max_pool1d(x, 1), [(3, 4)]),
        ("avg_pool2d", (0,)): (lambda x: F.avg_pool2d(x, 1), [(2, 3, 4)]), ("max_pool2d", (0,)): (lambda x: F.max_pool2d(x, 1), [(2, 3, 4)]),
        ("prelu", (0, 1)): (F.prelu, [(3, 4), (1,)]), ("clamp", (0, 2)): (lambda a, b: a.clamp(max=b), [(3, 4)] * 2),
        ("clamp", (0, 1, 2)): (torch.clamp, [(3, 4)] * 3),
        ("addmm", (0, 1, 2)): (torch.addmm, [(3, 5), (3, 4), (4, 5)]),
        ("baddbmm", (0, 1, 2)): (torch.baddbmm, [(2, 3, 5), (2, 3, 4), (2, 4, 5)]),
        ("pairwise_distance", (0, 1)): (F.pairwise_distance, [(3, 4), (3, 4)]),
        ("local_response_norm", (0,)): (lambda x: F.local_response_norm(x, 2), [(2, 3, 4)]),
        ("clamp_", (0, 1, 2)): (lambda x, a, b: x.clamp_(a, b), [(3, 4)] * 3),
        ("clip_", (0, 1, 2)): (lambda x, a, b: x.clip_(a, b), [(3, 4)] * 3),
        ("lerp_", (0, 1, 2)): (lambda x, y, w: x.lerp_(y, w), [(3, 4)] * 3),
    }
    if (name, positions) in others:
        return others[(name, positions)]
    if name.startswith("einsum:"):
        eq = name.split(":", 1)[1]
        ins = eq.split("->")[0].split(",")
        sizes = {"i": 3, "j": 4, "k": 5, "b": 2, "t": 3, "d": 4}
        return (lambda a, b: torch.einsum(eq, a, b)), [tuple(sizes[c] for c in s) for s in ins]
    if name in ("batch_norm", "group_norm", "layer_norm") and ranks is None:
        return _eager_norm(name, positions)
    if positions == (0,):
        if name in unary:
            fn = unary[name]
        elif name.endswith("_"):
            fn = lambda x: getattr(x, name)()  # noqa: E731
        else:
            fn = getattr(torch, name)
        return fn, [(3, 4)]
    shapes = {
        "matmul": {(2, 2): [(3, 4), (4, 5)], (3, 3): [(2, 3, 4), (2, 4, 5)], (4, 4): [(2, 2, 3, 4), (2, 2, 4, 5)],
                   (3, 2): [(2, 3, 4), (4, 5)]},
        "bmm": {(3, 3): [(2, 3, 4), (2, 4, 5)]},
        "linear": {(2, 2): [(3, 4), (5, 4)], (2, 2, 1): [(3, 4), (5, 4), (5,)], (3, 2, 1): [(2, 3, 4), (5, 4), (5,)]},
        "layer_norm": {(2, 1, 1): [(3, 4), (4,), (4,)]},
    }
    if name in shapes:
        fn = {"layer_norm": lambda x, w, b: F.layer_norm(x, (4,), w, b), "linear": F.linear}.get(name, getattr(torch, name, None))
        return fn, shapes[name][ranks]
    if name.startswith(("addcmul", "addcdiv")):
        if name.endswith("_"):
            return (lambda x, y, z: getattr(x, name)(y, z, value=0.5)), [(3, 4)] * 3
        return (lambda x, y, z: getattr(torch, name)(x, y, z, value=0.5)), [(3, 4)] * 3
    if name.endswith("_"):
        return (lambda x, y: getattr(x, name)(y)), [(3, 4), (3, 4)]
    return getattr(torch, name), [(3, 4), (3, 4)]


_NCHW, _C = (2, 4, 3, 5), (4,)


def _eager_norm(name, positions):
    """A normalization op's eager function over its tensor arguments (in Thunder's positions), their
    shapes, and the positions that never require grad (running stats). batch_norm: one function per
    mode (training, and eval where it has running stats), as the table holds for both."""
    if name == "batch_norm":
        stats = {(0,): (), (0, 3, 4): (), (0, 1, 2): (1, 2), (0, 1, 2, 3, 4): (1, 2)}[positions]

        def mode(training):
            def fn(*ts):
                got = dict(zip(positions, ts))
                return F.batch_norm(got[0], got.get(1), got.get(2), got.get(3), got.get(4), training)
            return fn
        fns = [mode(True), mode(False)] if stats else [mode(True)]
        return fns, [_NCHW] + [_C] * (len(positions) - 1), {positions.index(p) for p in stats}
    if name == "group_norm":
        return (lambda x, w, b: F.group_norm(x, 2, w, b)), [_NCHW, _C, _C], set()
    shapes = [_NCHW] + [(5,)] * (len(positions) - 1)
    return (lambda x, *wb: F.layer_norm(x, (5,), *wb)), shapes, set()


def _layouts(name, shapes):
    """The layouts a save must hold in: contiguous, transposed, and channels_last for batch_norm and
    layer_norm of a 4-d input (not group_norm: torch 2.9.1's CPU group_norm backward of a channels_last
    input that requires no grad crashes the process; nor matmul of 4-d operands, which copies a
    channels_last one: its table entry holds for the two layouts derived)."""
    if len(shapes[0]) == 4 and name in ("batch_norm", "layer_norm"):
        return ("contiguous", "transposed", "channels_last")
    return ("contiguous", "transposed")


def _raises(fn, shapes, requiring, candidate, layout):
    transposed = layout == "transposed"

    def make(i, s):
        t = _rnd(*s, seed=i).double()
        if transposed and len(s) >= 2:
            t = t.mT.contiguous().mT
        if layout == "channels_last" and len(s) == 4:
            t = t.contiguous(memory_format=torch.channels_last)
        if i in requiring:  # a non-leaf that requires grad, in the same layout
            leaf = t.detach().mT.clone().requires_grad_(True) if transposed and len(s) >= 2 else t.detach().clone().requires_grad_(True)
            t = (leaf * 1).mT if transposed and len(s) >= 2 else leaf * 1  # (* keeps channels_last)
        return t
    ts = [make(i, s) for i, s in enumerate(shapes)]
    out = fn(*ts)
    outs = list(out) if isinstance(out, (tuple, list)) else [out]  # (several results: "out", "out1", ...)
    target = outs[int(candidate[3:] or 0)] if isinstance(candidate, str) else ts[candidate]
    with torch.no_grad():
        target.mul_(1)
    try:
        sum(o.sum() for o in outs if o.is_floating_point() and o.requires_grad).backward()
    except RuntimeError as e:
        assert "modified by an inplace operation" in str(e), e
        return True
    return False


@pytest.mark.parametrize("key", list(SAVED_FOR_BACKWARD), ids=[f"{k[0]}{k[1]}{k[2] or ''}" for k in SAVED_FOR_BACKWARD])
def test_the_table_matches_eager(key):
    name, positions, ranks = key
    saves = SAVED_FOR_BACKWARD[key]
    fn, shapes, *no_grad = _eager_op(name, positions, ranks)
    no_grad = no_grad[0] if no_grad else set()
    fns = fn if isinstance(fn, list) else [fn]
    n = len(shapes)
    inplace = name.endswith("_")
    results = fns[0](*[_rnd(*shape, seed=i).double() for i, shape in enumerate(shapes)])
    n_out = len(results) if isinstance(results, (tuple, list)) else 1
    candidates = ["out" + (str(k) if k else "") for k in range(n_out)] + list(range(1 if inplace else 0, n))
    layouts = _layouts(name, shapes)
    for k in range(1, n + 1):
        for requiring in itertools.combinations([i for i in range(n) if i not in no_grad], k):
            for candidate in candidates:
                want = any(
                    (what == candidate if isinstance(what, str) else positions.index(what) == candidate)
                    and any(positions.index(p) in requiring for p in needs)
                    for what, needs in saves
                )
                got = [_raises(f, shapes, set(requiring), candidate, t) for f in fns for t in layouts]
                if want:  # a save the check relies on raises in every layout
                    assert all(got), (key, requiring, candidate, got)
                else:  # and the table misses none that does
                    assert not all(got), (key, requiring, candidate, got)


def test_the_table_names_thunder_symbols():
    import thunder.torch as ltorch
    from thunder.core.symbol import Symbol

    from fusion_alias.inplace_lookasides import _OUT_OF_PLACE

    symbols = [s for s in vars(ltorch).values() if isinstance(s, Symbol)]
    names = {s.name for s in symbols} | set(_OUT_OF_PLACE)  # (and fusion_alias's own)
    # F.elu(x, inplace=True) traces as elu with a copy_: saved_versions names it elu_
    names |= {s.name + "_" for s in symbols if "inplace" in inspect.signature(s.meta).parameters}
    names |= {"softmax"}  # torch.special.softmax, traced by Thunder's fallback as a symbol named "softmax" (session 46)
    missing = sorted({k[0] for k in SAVED_FOR_BACKWARD if not k[0].startswith("einsum:")} - names)
    assert not missing, missing


def test_an_inplace_op_fusion_alias_traces_saves_as_eager():
    # sigmoid_ (inplace_lookasides.py) saves its result: a later write of it raises at backward in eager
    def f(w):
        h = w * 2
        h.sigmoid_()
        h[0].add_(1)
        return h

    w = torch.randn(3, 4, requires_grad=True)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        f(w).sum().backward()
    with pytest.raises(AliasInputError, match="sigmoid_"):
        fusion_alias.jit(f, backend="reference")(torch.randn(3, 4, requires_grad=True))


# ---- Note [writes into views made under no_grad] (session 19 probe: these ran, eager raises)
def _no_grad_view_scaled(a, o):
    with torch.no_grad():
        v = a[0]
    v.mul_(2)
    return a * 1


def _no_grad_view_written_with_a_value_that_requires_grad(a, o):
    with torch.no_grad():
        v = a.t()
    v[1].add_(o[:3])
    return a * 1


def _view_of_a_no_grad_view(a, o):
    v = a[0]
    with torch.no_grad():
        u = v.unsqueeze(0)
    w = u[:, 1:]
    torch._foreach_mul_([w], 2.0)
    return a * 1


def _no_grad_view_written_under_no_grad(a, o):
    with torch.no_grad():
        v = a[0]
        v.mul_(2)
    return a * o


def _no_grad_detached_view(a, o):
    with torch.no_grad():
        v = a.detach()[0]
    v.mul_(2)
    return a * o


def _no_grad_copy_by_list_key(a, o):
    with torch.no_grad():
        v = a[[0, 1]]
    v.mul_(2)
    return a * v.sum()


def _no_grad_inputs(requires_grad=True):
    w, o = _rnd(3, 4).requires_grad_(), _rnd(4, seed=1).requires_grad_()
    return [w, o], ((w * 1) if requires_grad else _rnd(3, 4, seed=2), o)


@pytest.mark.parametrize("prog", [_no_grad_view_scaled, _no_grad_view_written_with_a_value_that_requires_grad,
                                  _view_of_a_no_grad_view])
@pytest.mark.parametrize("base_requires_grad", [True, False])
def test_a_write_into_a_view_made_under_no_grad_is_refused(prog, base_requires_grad):
    _, args = _no_grad_inputs(base_requires_grad)
    try:
        prog(*args)
    except RuntimeError as e:
        assert "no_grad mode" in str(e)
    else:  # eager runs it only where neither the view nor the value written requires grad
        assert not base_requires_grad and prog is not _no_grad_view_written_with_a_value_that_requires_grad
        _, args = _no_grad_inputs(base_requires_grad)
        fusion_alias.jit(prog, backend="reference")(*args)  # and so does fusion_alias
        return
    _, args = _no_grad_inputs(base_requires_grad)
    with pytest.raises(AliasInputError, match="made under torch.no_grad"):
        fusion_alias.jit(prog, backend="reference")(*args)


@pytest.mark.parametrize("prog", [_no_grad_view_written_under_no_grad, _no_grad_detached_view, _no_grad_copy_by_list_key])
def test_eager_valid_writes_near_no_grad_views_match_eager(prog):
    assert_matches_eager(prog, _no_grad_inputs)


def _no_grad_view_read_after_a_write_into_its_base(a, o):
    with torch.no_grad():
        v = a[0]
    a.mul_(2)
    return v * 1


def _no_grad_view_read_after_a_write_through_a_sibling(a, o):
    with torch.no_grad():
        v = a[0]
    a[1].mul_(o)  # makes a require grad where it did not
    return v + 1


def _no_grad_view_returned_after_a_no_grad_write(a, o):
    with torch.no_grad():
        v = a[0]
        a.mul_(2)
    return v


def _no_grad_view_read_before_the_write(a, o):
    with torch.no_grad():
        v = a[0]
    r = v * 2  # (v * o would save v for o's gradient: eager raises at backward)
    a.mul_(2)
    return r, a * o


def _no_grad_view_read_through_detach(a, o):
    with torch.no_grad():
        v = a[0]
    a.mul_(2)
    return a * 1, v.detach() * o


@pytest.mark.parametrize("prog", [_no_grad_view_read_after_a_write_into_its_base,
                                  _no_grad_view_read_after_a_write_through_a_sibling,
                                  _no_grad_view_returned_after_a_no_grad_write])
@pytest.mark.parametrize("base_requires_grad", [True, False])
def test_a_read_of_a_no_grad_view_after_a_write_into_its_memory_is_refused(prog, base_requires_grad):
    # Note [writes into views made under no_grad]: eager raises "A view was created in no_grad mode and its
    # base or another view of its base has been modified inplace" where the view requires grad by then
    _, args = _no_grad_inputs(base_requires_grad)
    try:
        outs = prog(*args)
        [t * 1 for t in (outs if isinstance(outs, tuple) else (outs,))]  # a returned view raises where it is used
    except RuntimeError as e:
        assert "no_grad mode" in str(e)
    else:
        assert not base_requires_grad and prog is not _no_grad_view_read_after_a_write_through_a_sibling
        _, args = _no_grad_inputs(base_requires_grad)
        fusion_alias.jit(prog, backend="reference")(*args)  # and so does fusion_alias
        return
    _, args = _no_grad_inputs(base_requires_grad)
    with pytest.raises(AliasInputError, match="made under torch.no_grad.*written in place since"):
        fusion_alias.jit(prog, backend="reference")(*args)


@pytest.mark.parametrize("prog", [_no_grad_view_read_before_the_write, _no_grad_view_read_through_detach])
def test_eager_valid_reads_of_no_grad_views_match_eager(prog):
    assert_matches_eager(prog, _no_grad_inputs)


def _saving_op_read_only_under_no_grad(a, b, c):  # an eager-valid neighbour of fuzz seed 20727 #18 (it ran before too)
    t0 = b.sin()  # saves b, whose version c.add_ bumps (one base)
    c.add_(c)
    with torch.no_grad():
        t3 = t0.permute(1, 0)  # no gradient goes through it: sin's backward never runs
    return t3, b.transpose(0, 1)


def _saving_op_overwritten_then_read_under_no_grad(a, b, c):  # fuzz seed 20727 #18 (basic --grad), as drawn
    t0 = b.sin()
    t1 = b.sum(0)
    t0.copy_(t0.detach())
    t2 = c.add_(c)
    with torch.no_grad():
        t3 = t0.permute(1, 0)
    t4 = b.transpose(0, 1)
    t5 = (t4 * c) * (-1.0 if id(b) == id(t2) else 1.0)
    t6 = t2.add(a, alpha=0.5)
    return (t3, t4,)


@pytest.mark.parametrize("prog", [_saving_op_read_only_under_no_grad, _saving_op_overwritten_then_read_under_no_grad])
def test_a_save_read_only_under_no_grad_is_not_refused(prog):
    # the stale-save refusal said "Eager PyTorch raises at backward" because the returned t3 kept sin live;
    # a result made under no_grad starts no backward (refusals/saved_versions.py, Note [a detached tensor
    # starts no backward])
    def make():
        w = _rnd(4, 6).requires_grad_()
        x0 = w * 1
        return [w], (x0, x0[:, ::2], x0[2, 1])

    assert_matches_eager(prog, make)


def _returns_a_no_grad_view(b):
    with torch.no_grad():
        t = b.transpose(0, 1)
    return t, b * 2


def _returns_a_no_grad_reshape(b):
    with torch.no_grad():
        t = b.reshape(-1)  # a view of a contiguous b (session-21 probe: it passed a gradient)
    return t, b * 2


def _writes_then_returns_a_no_grad_view(a, b):
    a.mul_(2)
    with torch.no_grad():
        t = b.t()[0]
    return t, a * b


@pytest.mark.parametrize("fn, n", [(_returns_a_no_grad_view, 1), (_writes_then_returns_a_no_grad_view, 2),
                                   (_returns_a_no_grad_reshape, 1)])
def test_a_returned_view_made_under_no_grad_is_refused_with_gradients(fn, n):
    # Note [a view made under no_grad, returned] (refusals/returned_views.py; fuzz seed 20758 #27, dtype --grad):
    # eager's view requires grad but passes no gradient back (leaf.grad None); ours passed one through
    # Thunder's Function or the argument view remade after the call (leaf.grad ones): refused, loud
    leaf = torch.rand(2, 3, dtype=torch.float64, requires_grad=True)
    out = fn(*[leaf * 1 for _ in range(n)])
    out[0].sum().backward()
    assert leaf.grad is None and out[0].requires_grad
    for schedule in SCHEDULES:
        with pytest.raises(AliasInputError, match="view made under torch.no_grad.*not supported"):
            fusion_alias.jit(fn, backend="reference", schedule=schedule)(*[leaf * 1 for _ in range(n)])
    with torch.no_grad():  # without gradients it runs, as eager does
        args_e, args_j = [leaf.detach().clone() for _ in range(n)], [leaf.detach().clone() for _ in range(n)]
        want, got = fn(*args_e), fusion_alias.jit(fn, backend="reference")(*args_j)
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w)
    for g, w in zip(args_j, args_e):
        torch.testing.assert_close(g, w)


def _returns_a_view_of_a_detach(b):
    t0 = b.detach().expand(2, 4, 3)  # fuzz seed 20769 #10 (layout --grad)
    return b, t0, t0.exp()


def _returns_a_reshape_of_a_detach(b):
    return b.detach().reshape(-1), b * 2  # of a contiguous b a view (a copy of b[:, :2]: refused too, not told apart)


def _runs_as_eager_without_gradients(fn, leaf):
    with torch.no_grad():  # without gradients it runs, as eager does
        b_e, b_j = leaf.detach().clone(), leaf.detach().clone()
        want, got = fn(b_e), fusion_alias.jit(fn, backend="reference")(b_j)
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w)
    torch.testing.assert_close(b_j, b_e)


@pytest.mark.parametrize("fn, grads", [(_returns_a_view_of_a_detach, [True, False]),
                                       (_returns_a_reshape_of_a_detach, [False, True])])
def test_a_returned_view_of_a_detached_argument_is_refused_with_gradients(fn, grads):
    # Note [a view made under no_grad, returned] (refusals/returned_views.py, session 21): eager's view of
    # b.detach() requires no grad, so a loss over the outputs that do leaves it out; ours was remade after the call
    # as a view of b (view_outputs.py) and passed b a gradient: wrong leaf gradients. Refused, loud
    leaf = torch.rand(4, 3, requires_grad=True)
    assert [o.requires_grad for o in fn(leaf * 1)][:2] == grads
    for schedule in SCHEDULES:
        with pytest.raises(AliasInputError, match="a view of a detach.*ed tensor that requires grad.*not supported"):
            fusion_alias.jit(fn, backend="reference", schedule=schedule)(leaf * 1)
    _runs_as_eager_without_gradients(fn, leaf)


def _returns_a_view_through_an_integer_dtype(a):
    t0 = a.view(torch.int32).view(torch.float32)[None]  # fuzz seed 20797 #38 (layout --grad), reduced
    return a * 2, t0


def _returns_an_expand_through_an_integer_dtype(a):
    return a * 2, a.view(torch.int32).view(torch.float32).expand(2, 3, 4).reshape(2, -1)


@pytest.mark.parametrize("fn", [_returns_a_view_through_an_integer_dtype, _returns_an_expand_through_an_integer_dtype])
def test_a_returned_view_through_an_integer_dtype_is_refused_with_gradients(fn):
    # Note [a view through an integer dtype, returned] (refusals/returned_views.py, session 22): eager's t0 requires
    # no grad; ours was remade after the call as a view of a (view_outputs.py) and passed a a gradient: wrong leaf
    # gradients, no error. Refused, loud, as a view of a.detach() is
    leaf = torch.linspace(-1, 1, 12).reshape(1, 3, 4).requires_grad_()
    assert [o.requires_grad for o in fn(leaf * 1)] == [True, False]
    for schedule in SCHEDULES:
        with pytest.raises(AliasInputError, match="or of an integer view.dtype. of one.*not supported"):
            fusion_alias.jit(fn, backend="reference", schedule=schedule)(leaf * 1)
    _runs_as_eager_without_gradients(fn, leaf)


def _integer_dtype_view_used_not_returned(a):
    return a.sum(), a.view(torch.int32).view(torch.float32).t() * 1, a.view(torch.int32)


def _integer_dtype_view_of_a_written_copy(a):
    c = a * 3
    c.add_(1)
    return c, a.view(torch.int32).view(torch.float32)[None]


def test_integer_dtype_views_not_returned_as_views_still_run_with_gradients():
    # the neighbours that matched eager already: a computed result of the view, the integer view itself, a program
    # that writes (its outputs get eager's marks, autograd_functionalize.py)
    def make():
        w = torch.linspace(-1, 1, 12).reshape(3, 4).requires_grad_()
        return [w], [w * 1]

    assert_matches_eager(_integer_dtype_view_used_not_returned, make)
    assert_matches_eager(_integer_dtype_view_of_a_written_copy, make)


def test_detach_after_the_view_still_runs_with_gradients():
    # its neighbours that matched eager already (Thunder's detached outputs: no gradient reaches b) stay allowed
    def prog(b):
        return b, b.expand(2, 4, 3).detach(), b.detach(), (b * 2).detach()[1::2]

    def make():
        w = torch.linspace(-1, 1, 24).reshape(4, 6).requires_grad_()
        return [w], ((w * 1)[:, :3],)

    assert_matches_eager(prog, make)


def _writes_a_reshape_made_under_no_grad(a):
    with torch.no_grad():
        t = a.reshape(-1)  # a view of a contiguous a
    t.abs_()
    return a * 1


def _reads_a_flatten_made_under_no_grad_after_a_write(a):
    with torch.no_grad():
        t = a.flatten()
    a.mul_(2)
    return t * 1


def _writes_a_reshape_that_copies_made_under_no_grad(a):
    with torch.no_grad():
        t = a.t().reshape(-1)  # a copy: eager runs
    t.abs_()
    return a * 1, t


@pytest.mark.parametrize("fn", [_writes_a_reshape_made_under_no_grad, _reads_a_flatten_made_under_no_grad_after_a_write])
def test_a_reshape_made_under_no_grad_that_is_a_view_is_checked_as_a_view(fn):
    # fuzz seed 20771 #59 (hidden --grad): `with torch.no_grad(): t2 = t0.reshape(1)`, then `t2.abs_()` under grad
    # mode: eager raises ("A view was created in no_grad mode and is being modified inplace ..."), the jitted call ran
    # (a missed rejection): reshape and flatten were not checked, view or copy. Those that are views in eager (the
    # reshape decisions of layouts.py) are now checked as views (Note [writes into views made under no_grad])
    leaf = torch.linspace(-1, 1, 6).reshape(2, 3).requires_grad_()
    with pytest.raises(RuntimeError, match="A view was created in no_grad mode"):
        fn(leaf * 1)
    for schedule in SCHEDULES:
        with pytest.raises(AliasInputError, match="made under torch.no_grad"):
            fusion_alias.jit(fn, backend="reference", schedule=schedule)(leaf * 1)


def test_a_reshape_made_under_no_grad_that_copies_still_runs():
    def make():
        w = torch.linspace(-1, 1, 6).reshape(2, 3).requires_grad_()
        return [w], (w * 1,)

    assert_matches_eager(_writes_a_reshape_that_copies_made_under_no_grad, make)


# ---- Note [as_strided of a view, returned] (refusals/strided_outputs.py)

def _strided_of_strided_returned(a):  # fuzz seed 31004 #8 (strided --grad): wrong gradients at a[6], a[8]
    t0 = a.as_strided((2, 3), (3, 1))
    t1 = t0.as_strided((4, 2), (2, 2))
    return t1, a, t0, t0 * 2


def _strided_of_a_slice_viewed_further(a):
    t1 = a[2:].as_strided((2, 2), (1, 3))
    return t1.t(), a * 2


def _strided_of_the_argument(a):  # as_strided of the argument itself: the remade view restricts as eager's
    return a.as_strided((4, 2), (2, 2)), a * 2


def _strided_of_a_view_read_only(a):  # not returned: its gradient stays inside Thunder's function
    t1 = a[1:3].as_strided((3, 2), (2, 1))  # (reaching past a[1:3]: eager's backward drops those, so does Thunder's)
    return t1.sum(0) * 2, a * 1


def _twelve():
    leaf = torch.linspace(-1.0, 1.0, 12).requires_grad_()
    return [leaf], [leaf * 1]


@pytest.mark.parametrize("fn", [_strided_of_strided_returned, _strided_of_a_slice_viewed_further])
def test_a_returned_as_strided_of_a_view_is_refused_with_gradients(fn):
    for schedule in SCHEDULES:
        _, args = _twelve()
        with pytest.raises(AliasInputError, match="a view made by as_strided of a view of an argument"):
            fusion_alias.jit(fn, backend="reference", schedule=schedule)(*args)
    # without gradients the output is not remade: eager's values
    _, args = _twelve()
    args = [a.detach() for a in args]
    want = fn(*[a.clone() for a in args])
    with torch.no_grad():
        got = fusion_alias.jit(fn, backend="reference")(*args)
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w)


@pytest.mark.parametrize("fn", [_strided_of_the_argument, _strided_of_a_view_read_only])
def test_as_strided_neighbours_run_with_gradients(fn):
    assert_matches_eager(fn, _twelve)


# ---- Note [reads that ask eager's autograd nothing] (fuzz seed 31027 #194: refused with a false "eager raises")
def _no_grad_view_then_write(b):
    t0 = b / (b.abs() + 1)
    with torch.no_grad():
        t1 = t0.narrow(0, 2, 2)
    t0 += 0.125
    return t0, t1


@pytest.mark.parametrize("read", ["gt", "eq", "argmax", "long", "isnan", "zeros_like"])
def test_a_read_with_no_gradient_of_a_stale_no_grad_view_runs_as_eager(read):
    reads = {"gt": lambda t: t > t, "eq": lambda t: t.eq(0), "argmax": torch.argmax, "long": lambda t: t.long(),
             "isnan": torch.isnan, "zeros_like": torch.zeros_like}

    def fn(b):
        t0, t1 = _no_grad_view_then_write(b)
        return t0.mul_(2), reads[read](t1)

    def run(f):
        leaf = torch.linspace(-1, 1, 24).reshape(4, 6).requires_grad_()
        out = f(leaf * 1)
        out[0].sum().backward()
        return [o.detach() for o in out], leaf.grad

    (want, want_grad), (got, got_grad) = run(fn), run(fusion_alias.jit(fn))
    torch.testing.assert_close(got, want)
    torch.testing.assert_close(got_grad, want_grad)


@pytest.mark.parametrize("read", ["mul", "isfinite", "half"])
def test_a_read_with_a_gradient_of_a_stale_no_grad_view_is_still_refused(read):
    reads = {"mul": lambda t: t * 2, "isfinite": torch.isfinite, "half": lambda t: t.half()}

    def fn(b):
        return reads[read](_no_grad_view_then_write(b)[1])

    b = torch.linspace(-1, 1, 24).reshape(4, 6).requires_grad_()
    with pytest.raises(RuntimeError, match="created in no_grad mode"):
        fn(b * 1)
    with pytest.raises(AliasInputError, match="created in no_grad mode"):
        fusion_alias.jit(fn)(b * 1)


def test_an_argument_without_gradient_saves_nothing_though_it_shares_memory():
    # fuzz seed 26003 #119 (modules --grad): ``a * a`` of an argument that does not require grad saves nothing
    # for the backward, though ``a`` shares memory with ``h``, which does; the later no_grad write was refused
    # saying eager raises at backward. Eager runs it; fusion_alias may still refuse it, but not with that claim.
    def fn(a, h):
        t0 = a * a
        with torch.no_grad():
            h.mul_(2)
        return t0 + 1, h * 3

    b = torch.linspace(-1, 1, 6).view(2, 3).requires_grad_()
    h = b * 1
    t0, t1 = fn(h.detach()[0], h)
    t1.sum().backward()  # eager: no error
    h = b * 1
    try:
        fusion_alias.jit(fn)(h.detach()[0], h)
    except AliasInputError as e:
        assert "Eager PyTorch raises" not in str(e), str(e)


def test_a_gradient_written_into_a_detached_view_keeps_no_other_save_live():
    # Note [a gradient written into a detached tensor] (live_backward.py; fuzz seed 31028 #148, fresh --grad):
    # norm's save of b is never used by eager's backward from the returned b, so the later write is no stale save.
    def fn(a, b):
        t0 = b.detach()[1::2, ::2]
        b.div_(t0.norm())
        t0.add_(b.norm())
        return b, a * 1

    def make():
        leaf = torch.linspace(-1, 1, 16).reshape(4, 4).requires_grad_()
        return leaf, leaf * 1

    leaf, b = make()
    out = fn(leaf * 2, b)
    out[0].sum().backward()  # eager: no error
    leaf, b = make()
    try:
        fusion_alias.jit(fn)(leaf * 2, b)
    except AliasInputError as e:  # (a value with a gradient written into a detached view: a documented refusal)
        assert "Eager PyTorch raises" not in str(e), str(e)
