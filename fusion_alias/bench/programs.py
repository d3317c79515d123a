"""The benchmark suite: small programs with in-place ops on tensors that may share memory.

Each :class:`Program` has a function (plain PyTorch) and an input maker that
builds its arguments, with the aliasing the program is about, from a seed.
Families:

* ``seed``: the seed repros of the core issue (tests/programs.py and the demo import them from here),
  with inputs ``(x, x[0, 0])`` unless the program is about independent inputs;
* ``optimizer``: SGD / momentum / Adam steps over several parameters written in
  place, with independent parameters or with parameters that are disjoint
  slices of one flat buffer (Thunder sees one storage; the exact overlap guard
  sees no overlap);
* ``kv-cache``: writes into a slice of a large buffer, then reads of the buffer;
* ``residual``: ``x.add_(f(x))`` chains;
* ``views``: views written and read in turn;
* ``no-alias``: programs without aliasing, as a control.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import torch


@dataclass(frozen=True)
class Program:
    name: str
    family: str
    fn: Callable
    make_inputs: Callable[[int], tuple]  # seed -> positional arguments
    about: str = ""


def _randn(*shape, seed: int = 0, offset: int = 0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(1000 * seed + offset))


# -- seed programs (the list; tests and examples import these) ------


def f(a, b):
    return a.exp_() * b.tanh_()


def g(a, _):
    b = a.view(5, 5)
    return a.exp_() * b.tanh_()


def h(a, _):
    b = a[0, 0]
    return a.exp_() * b.tanh_()


def k(a, b):
    t2 = a.exp_()
    b.tanh_()
    return t2.sin()


def scalar_view_then_exp(a, _):
    b = a[0, 0]
    c = a.exp_()
    b.tanh_()
    return c.sin()


def view_exp_tanh(a, _):
    b = a.view(5, 5)
    c = a.exp_()
    b.tanh_()
    return c.sin() * 2 * b


def two_views(a, _):
    b = a.view(5, 5)
    c = a.view(5, 5)
    b.tanh_()
    return c.sin() * 2 * b


def write_then_add(a, b):
    result = a.exp_() * b.tanh_()
    a.add_(1)
    return result, a


def tanh_pow4(a, _):
    a.tanh_()
    return a * a * a * a


def independent(a, b):
    return a.exp_() * b.tanh_()


def _aliased(seed):
    x = _randn(5, 5, seed=seed)
    return (x, x[0, 0])


def _independent(seed):
    return (_randn(5, 5, seed=seed), _randn(5, 5, seed=seed, offset=1))


SEED = [
    Program("f", "seed", f, _aliased, "a.exp_() * b.tanh_(), b = a[0,0] passed in"),
    Program("g", "seed", g, _aliased, "b = a.view(5,5); a.exp_() * b.tanh_()"),
    Program("h", "seed", h, _aliased, "b = a[0,0]; a.exp_() * b.tanh_()"),
    Program("k", "seed", k, _aliased, "t = a.exp_(); b.tanh_(); t.sin()"),
    Program("scalar_view_then_exp", "seed", scalar_view_then_exp, _aliased),
    Program("view_exp_tanh", "seed", view_exp_tanh, _aliased),
    Program("two_views", "seed", two_views, _aliased),
    Program("write_then_add", "seed", write_then_add, _aliased),
    Program("tanh_pow4", "seed", tanh_pow4, _aliased, "a.tanh_(); a*a*a*a"),
    Program("independent", "seed", independent, _independent),
]

# -- optimizer steps -----------------------------------------------------------

N_PARAMS = 8
PARAM_NUMEL = 16
LR, MOMENTUM, B1, B2, EPS = 0.1, 0.9, 0.9, 0.999, 1e-8


def sgd(params, grads):
    for p, gr in zip(params, grads):
        p.add_(gr, alpha=-LR)
    return params


def sgd_momentum(params, grads, bufs):
    for p, gr, buf in zip(params, grads, bufs):
        buf.mul_(MOMENTUM).add_(gr)
        p.add_(buf, alpha=-LR)
    return params


def adam(params, grads, ms, vs):
    # step 1, bias corrections folded into constants
    bc1, bc2 = 1 - B1, 1 - B2
    step_size = LR / bc1
    for p, gr, m, v in zip(params, grads, ms, vs):
        m.mul_(B1).add_(gr, alpha=1 - B1)
        v.mul_(B2).addcmul_(gr, gr, value=1 - B2)
        denom = (v.sqrt() / bc2**0.5).add_(EPS)
        p.addcdiv_(m, denom, value=-step_size)
    return params


def _tensors(n, seed, offset):
    return [_randn(PARAM_NUMEL, seed=seed, offset=offset + i) for i in range(n)]


def _flat_views(n, seed, offset):
    """n disjoint slices of one flat buffer (a flattened parameter store)."""
    flat = _randn(n * PARAM_NUMEL, seed=seed, offset=offset)
    return [flat[i * PARAM_NUMEL : (i + 1) * PARAM_NUMEL] for i in range(n)]


def _sgd_inputs(n, flat):
    def make(seed):
        params = _flat_views(n, seed, 0) if flat else _tensors(n, seed, 0)
        return (params, _tensors(n, seed, 100))

    return make


def _momentum_inputs(n):
    def make(seed):
        return (_tensors(n, seed, 0), _tensors(n, seed, 100), _tensors(n, seed, 200))

    return make


def _adam_inputs(n, flat):
    def make(seed):
        params = _flat_views(n, seed, 0) if flat else _tensors(n, seed, 0)
        ms = _flat_views(n, seed, 300) if flat else _tensors(n, seed, 300)
        vs = [x.abs() for x in (_flat_views(n, seed, 400) if flat else _tensors(n, seed, 400))]
        if flat:  # keep v's slices views of one buffer after abs()
            buf = torch.cat(vs)
            vs = [buf[i * PARAM_NUMEL : (i + 1) * PARAM_NUMEL] for i in range(n)]
        return (params, _tensors(n, seed, 100), ms, vs)

    return make


def ema(averages, weights):
    for avg, w in zip(averages, weights):
        avg.mul_(MOMENTUM).add_(w, alpha=1 - MOMENTUM)
    return averages


def _tied(tensors):
    """Every other entry the same tensor as the one before it (tied weights: an embedding and
    the output projection that shares it, listed once per module)."""
    return [tensors[i - i % 2] for i in range(len(tensors))]


def _sgd_tied_inputs(n):
    def make(seed):
        return (_tied(_tensors(n, seed, 0)), _tied(_tensors(n, seed, 100)))

    return make


def _ema_tied_inputs(n):
    def make(seed):
        return (_tied(_tensors(n, seed, 500)), _tied(_tensors(n, seed, 0)))

    return make


def _adam_tied_inputs(n):
    def make(seed):
        vs = [x.abs() for x in _tensors(n, seed, 400)]
        return (_tied(_tensors(n, seed, 0)), _tied(_tensors(n, seed, 100)), _tied(_tensors(n, seed, 300)), _tied(vs))

    return make


OPTIMIZER = [
    Program("sgd_2", "optimizer", sgd, _sgd_inputs(2, False), "p.add_(g, alpha=-lr), 2 params"),
    Program("sgd_8", "optimizer", sgd, _sgd_inputs(N_PARAMS, False), "8 independent params"),
    Program("sgd_8_flat", "optimizer", sgd, _sgd_inputs(N_PARAMS, True), "8 params = slices of one buffer"),
    Program("momentum_8", "optimizer", sgd_momentum, _momentum_inputs(N_PARAMS), "buf.mul_().add_(g); p.add_(buf)"),
    Program("adam_1", "optimizer", adam, _adam_inputs(1, False), "one Adam step, 1 param"),
    Program("adam_8", "optimizer", adam, _adam_inputs(N_PARAMS, False), "Adam, 8 independent params"),
    Program("adam_8_flat", "optimizer", adam, _adam_inputs(N_PARAMS, True), "Adam, p/m/v slices of flat buffers"),
    Program("sgd_8_tied", "optimizer", sgd, _sgd_tied_inputs(N_PARAMS), "SGD, params tied in pairs (same tensor twice)"),
    Program("ema_8_tied", "optimizer", ema, _ema_tied_inputs(N_PARAMS), "avg.mul_(d).add_(w), tied in pairs"),
    Program("adam_8_tied", "optimizer", adam, _adam_tied_inputs(N_PARAMS), "Adam, p/g/m/v tied in pairs"),
]

def adam_lerp(params, grads, ms, vs):
    """``torch.optim.Adam``'s own form: ``exp_avg.lerp_(grad, 1 - beta1)``."""
    bc1, bc2 = 1 - B1, 1 - B2
    for p, gr, m, v in zip(params, grads, ms, vs):
        m.lerp_(gr, 1 - B1)
        v.mul_(B2).addcmul_(gr, gr, value=1 - B2)
        denom = (v.sqrt() / bc2**0.5).add_(EPS)
        p.addcdiv_(m, denom, value=-LR / bc1)
    return params


def ddp_step(bucket, params, grads):
    """A DDP bucket and its views: the all-reduce's average in place on the bucket, then SGD reading
    each gradient through its own view (passed in beside the bucket)."""
    bucket.mul_(0.5)
    for p, gr in zip(params, grads):
        p.add_(gr, alpha=-LR)
    return params


def _ddp_inputs(n):
    def make(seed):
        bucket = _randn(n * PARAM_NUMEL, seed=seed, offset=100)
        grads = [bucket[i * PARAM_NUMEL : (i + 1) * PARAM_NUMEL] for i in range(n)]
        return (bucket, _tensors(n, seed, 0), grads)

    return make


OPTIMIZER += [
    Program("adam_lerp_8", "optimizer", adam_lerp, _adam_inputs(N_PARAMS, False), "Adam with m.lerp_(g, 1 - b1)"),
    Program("ddp_bucket_8", "optimizer", ddp_step, _ddp_inputs(N_PARAMS), "bucket.mul_(0.5); SGD through its views"),
]

# -- KV-cache writes -------------------------------------------------------------

B, T, D, POS = 2, 16, 8, 5


def kv_write_read(cache, k, q):
    cache[:, POS : POS + 1].copy_(k)
    return (cache * q).sum(-1)


def kv_two_caches(kc, vc, k, v, q):
    kc[:, POS : POS + 1].copy_(k)
    vc[:, POS : POS + 1].copy_(v)
    scores = (kc * q).sum(-1).softmax(-1)
    return (scores.unsqueeze(-1) * vc).sum(1)


def kv_two_steps(cache, k1, k2, q):
    cache[:, POS : POS + 1].copy_(k1)
    s1 = (cache * q).sum(-1)
    cache[:, POS + 1 : POS + 2].copy_(k2)
    s2 = (cache * q).sum(-1)
    return s1, s2


def kv_from_self(cache, k, q):
    # k is a view of the cache itself (an earlier position), passed in as an argument
    cache[:, POS : POS + 1].copy_(k * 2)
    return (cache * q).sum(-1)


def _kv_inputs(seed):
    return (_randn(B, T, D, seed=seed), _randn(B, 1, D, seed=seed, offset=1), _randn(B, 1, D, seed=seed, offset=2))


def _kv2_inputs(seed):
    return (
        _randn(B, T, D, seed=seed),
        _randn(B, T, D, seed=seed, offset=1),
        _randn(B, 1, D, seed=seed, offset=2),
        _randn(B, 1, D, seed=seed, offset=3),
        _randn(B, 1, D, seed=seed, offset=4),
    )


def _kv_steps_inputs(seed):
    return (
        _randn(B, T, D, seed=seed),
        _randn(B, 1, D, seed=seed, offset=1),
        _randn(B, 1, D, seed=seed, offset=2),
        _randn(B, 1, D, seed=seed, offset=3),
    )


def _kv_self_inputs(seed):
    cache = _randn(B, T, D, seed=seed)
    return (cache, cache[:, 2:3], _randn(B, 1, D, seed=seed, offset=2))


KV = [
    Program("kv_write_read", "kv-cache", kv_write_read, _kv_inputs, "cache[:, p:p+1].copy_(k); (cache*q).sum(-1)"),
    Program("kv_two_caches", "kv-cache", kv_two_caches, _kv2_inputs, "k and v caches written, attention read"),
    Program("kv_two_steps", "kv-cache", kv_two_steps, _kv_steps_inputs, "write, read, write, read"),
    Program("kv_from_self", "kv-cache", kv_from_self, _kv_self_inputs, "k = cache[:, 2:3] passed in"),
]

# -- residual chains -----------------------------------------------------------------


def residual_4(x):
    for _ in range(4):
        x.add_(torch.tanh(x) * 0.5)
    return x


def residual_view(x):
    row = x[0]
    x.add_(x.sin())
    row.mul_(2)
    x.add_(x.cos())
    return x


def residual_aliased(a, b):
    a.add_(b.tanh())
    b.add_(a.sin().sum() * 0.1)
    return a * 2


def _one(seed):
    return (_randn(6, 6, seed=seed),)


RESIDUAL = [
    Program("residual_4", "residual", residual_4, _one, "x.add_(tanh(x)*0.5) x4"),
    Program("residual_view", "residual", residual_view, _one, "x.add_(sin x); x[0].mul_(2); x.add_(cos x)"),
    Program("residual_aliased", "residual", residual_aliased, _aliased, "a.add_(b.tanh()); b.add_(a.sin().sum()*0.1), b = a[0,0]"),
]

# -- views written and read in turn ----------------------------------------------------


def rows_rw(a):
    r0, r1 = a[0], a[1]
    r0.mul_(2)
    s = r1 * 3
    r1.add_(r0)
    return a.sum(), s


def overlapping_views(a):
    left, right = a[:, :3], a[:, 2:]
    left.add_(1)
    right.mul_(2)
    return a * 1


def transpose_write(a):
    t = a.t()
    t.add_(1)
    return a.exp()


def strided_halves(a, b):
    # a = x[:, ::2], b = x[:, 1::2]: same storage, no overlap
    a.mul_(2)
    b.add_(a)
    return a + b


def _strided(seed):
    x = _randn(6, 6, seed=seed)
    return (x[:, ::2], x[:, 1::2])


VIEWS = [
    Program("rows_rw", "views", rows_rw, _one, "a[0].mul_(2); a[1]*3; a[1].add_(a[0]); a.sum()"),
    Program("overlapping_views", "views", overlapping_views, _one, "a[:, :3].add_(1); a[:, 2:].mul_(2)"),
    Program("transpose_write", "views", transpose_write, _one, "a.t().add_(1); a.exp()"),
    Program("strided_halves", "views", strided_halves, _strided, "x[:, ::2] and x[:, 1::2] passed in"),
]

# -- no aliasing ---------------------------------------------------------------------------


def pointwise(a, b, c):
    return (a * b).sin() + c.exp()


def softmax(a):
    e = (a - a.amax(-1, keepdim=True)).exp()
    return e / e.sum(-1, keepdim=True)


def fresh_inplace(a, b):
    c = a * 2
    c.add_(1)
    c.mul_(b)
    return c


def _three(seed):
    return tuple(_randn(6, 6, seed=seed, offset=i) for i in range(3))


NO_ALIAS = [
    Program("pointwise", "no-alias", pointwise, _three, "(a*b).sin() + c.exp()"),
    Program("softmax", "no-alias", softmax, _one),
    Program("fresh_inplace", "no-alias", fresh_inplace, _independent, "c = a*2; c.add_(1); c.mul_(b)"),
]

SUITE: list[Program] = SEED + OPTIMIZER + KV + RESIDUAL + VIEWS + NO_ALIAS

#: a few small programs for the fast test
QUICK_TEST = ["f", "h", "tanh_pow4", "sgd_2", "kv_write_read", "residual_view", "independent"]


def by_name(names) -> list[Program]:
    index = {p.name: p for p in SUITE}
    return [index[n] for n in names]


# -- a long program (compile-share measurement) ---------------------------------------------


def long_program_source(lines: int = 1000) -> str:
    """Source of ``def long_program(a, b, c)``: ``lines`` statements of in-place and pure ops.

    Called with ``(x, x[0], y)`` the first two arguments alias. Values stay
    bounded (tanh, scaling by constants below one).
    """
    body = []
    kinds = [
        "a.mul_(0.5)",
        "t = b.tanh()",
        "b.add_(t, alpha=0.25)",
        "c.mul_(0.9).add_(a.sum() * 0.01)",
        "u = (c * 0.5).sin()",
        "a.add_(u[0] * 0.1)",
        "c.tanh_()",
        "a.sub_(b * 0.1)",
    ]
    for i in range(lines):
        body.append("    " + kinds[i % len(kinds)])
    return "def long_program(a, b, c):\n" + "\n".join(body) + "\n    return a, b, c\n"


def long_program(lines: int = 1000) -> Program:
    namespace: dict = {}
    exec(compile(long_program_source(lines), f"<long_program_{lines}>", "exec"), namespace)
    fn = namespace["long_program"]

    def make(seed):
        x = _randn(4, 8, seed=seed)
        return (x, x[0], _randn(4, 8, seed=seed, offset=1))

    return Program(f"long_{lines}", "long", fn, make, f"{lines} lines of in-place ops on (x, x[0], y)")


def long_independent_inputs(seed):
    """Inputs for :func:`long_program` that do not alias (Thunder's alias pass rejects the aliased ones)."""
    return (_randn(4, 8, seed=seed), _randn(8, seed=seed, offset=2), _randn(4, 8, seed=seed, offset=1))
