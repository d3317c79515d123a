"""Session 31: small real programs (optimizer steps, BatchNorm statistics, KV-cache decode steps, rotary
embeddings, EMA, gradient clipping, tied weights, recurrent state) compared with eager over several calls, on
every reference schedule: outputs, every input the program writes, and the leaves' gradients.

Two found bugs: rotary embeddings through ``view_as_complex`` got a wrong gradient (Thunder 0.2.6's complex
gradients do not conjugate; refusals/complex_gradients.py, Note [a complex product's gradient conjugates]), and
``self.n += 1`` on a buffer of the module called was refused in a training call (functionalized_epilogue.py).
"""

import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import fusion_alias
from fusion_alias.backends.reference import SCHEDULES
from fusion_alias.errors import AliasInputError
from tests.grad_helpers import assert_matches_eager


def _rnd(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def _flat(x):
    if isinstance(x, torch.Tensor):
        return [x]
    if isinstance(x, dict):
        return [t for v in x.values() for t in _flat(v)]
    if isinstance(x, (list, tuple)):
        return [t for v in x for t in _flat(v)]
    return []


def _snapshot(state, out):
    return [t.detach().clone() for t in _flat(state) + _flat(out)]


def assert_steps_match(fn, make, step, calls=3):
    """``step(f, state, i)`` called ``calls`` times on one state: eager's outputs and state after every call, on
    every schedule (the first call compiles, later ones hit the cache)."""
    state = make()
    want = [_snapshot(state, step(fn, state, i)) for i in range(calls)]
    for schedule in SCHEDULES:
        state = make()
        jitted = fusion_alias.jit(fn, backend="reference", schedule=schedule)
        for i in range(calls):
            got = _snapshot(state, step(jitted, state, i))
            assert len(got) == len(want[i])
            for g, w in zip(got, want[i]):
                torch.testing.assert_close(g, w, msg=lambda m: f"{schedule}, call {i}: {m}")


# ---- bug 1: complex gradients (rotary embeddings as Llama writes them)


def _rope(q, k, freqs):
    qc = torch.view_as_complex(q.float().reshape(*q.shape[:-1], -1, 2))
    kc = torch.view_as_complex(k.float().reshape(*k.shape[:-1], -1, 2))
    return torch.view_as_real(qc * freqs).flatten(-2).type_as(q), torch.view_as_real(kc * freqs).flatten(-2).type_as(k)


def _rope_inputs():
    t = torch.arange(6, dtype=torch.float32)
    inv = 1.0 / (10000 ** (torch.arange(0, 4, 2).float() / 4))
    freqs = torch.polar(torch.ones(6, 2), torch.outer(t, inv)).view(1, 6, 1, 2)
    q, k = _rnd(2, 6, 2, 4, seed=1).requires_grad_(), _rnd(2, 6, 2, 4, seed=2).requires_grad_()
    return [q, k], (q, k, freqs)


def test_rotary_complex_gradient():
    """q.grad is g * conj(freqs); Thunder's rule gave g * freqs (plain thunder.jit still does)."""
    assert_matches_eager(_rope, _rope_inputs)


@pytest.mark.parametrize("op", ["mul", "div", "scalar", "square", "addcmul", "sum"])
def test_complex_product_gradients(op):
    fns = {"mul": lambda a, b: a * b, "div": lambda a, b: a / b, "scalar": lambda a, b: a * (2 + 1j) + b,
           "square": lambda a, b: a * a - b, "addcmul": lambda a, b: a.addcmul(a, b, value=0.5),
           "sum": lambda a, b: (a * b).sum() * b}

    def fn(a, b):
        return torch.view_as_real(fns[op](a, b))

    def inputs():
        g = torch.Generator().manual_seed(3)
        a = torch.randn(4, dtype=torch.complex64, generator=g).requires_grad_()
        b = torch.randn(4, dtype=torch.complex64, generator=g).requires_grad_()
        return [a, b], (a, b)

    assert_matches_eager(fn, inputs)


@pytest.mark.parametrize("op", ["exp", "tanh", "sqrt", "matmul"])
def test_complex_gradients_thunder_gets_wrong_are_refused(op):
    fns = {"exp": torch.exp, "tanh": torch.tanh, "sqrt": torch.sqrt, "matmul": lambda a: a @ a.view(4, 1)}
    a = torch.randn(4, dtype=torch.complex64).requires_grad_()
    with pytest.raises(AliasInputError, match="complex tensor .* not conjugated"):
        fusion_alias.jit(lambda a: torch.view_as_real(fns[op](a)), backend="reference")(a)
    with torch.no_grad():  # (no gradient: it runs)
        want = torch.view_as_real(fns[op](a))
        torch.testing.assert_close(fusion_alias.jit(lambda a: torch.view_as_real(fns[op](a)))(a), want)


def test_complex_value_made_from_a_real_leaf_is_followed():
    """``exp(1j * t)`` of a real ``t`` that requires grad: the trace's proxy of ``1j * t`` does not say it requires
    grad, so the refusal follows it from the inputs (a learnable rotary angle)."""
    t = torch.randn(4).requires_grad_()
    c = torch.randn(4, dtype=torch.complex64)
    with pytest.raises(AliasInputError, match="exp of the complex tensor"):
        fusion_alias.jit(lambda t, c: torch.view_as_real(torch.exp(1j * t) * c), backend="reference")(t, c)
    with pytest.raises(AliasInputError, match="exp of the complex tensor"):  # (through another op first)
        fusion_alias.jit(lambda t, c: torch.view_as_real(torch.exp(1j * (t * 2)) * c), backend="reference")(t, c)
    out = fusion_alias.jit(lambda t, c: torch.view_as_real(torch.exp(1j * t.detach()) * c) * t[:, None])(t, c)
    torch.testing.assert_close(out, torch.view_as_real(torch.exp(1j * t.detach()) * c) * t[:, None])



def _spectral_conv(x, w):
    return torch.fft.irfft(torch.fft.rfft(x, dim=-1) * w, n=x.shape[-1], dim=-1)


def _polar_rotation(theta, c):
    return torch.view_as_real(torch.polar(torch.ones(4), theta) * c)


@pytest.mark.parametrize("program", ["spectral", "polar"])
def test_complex_values_through_ops_torch_differentiates(program):
    """An FNO-style spectral convolution (``rfft``, a complex weight, ``irfft``) and a learnt rotation angle through
    ``torch.polar``: Thunder runs ``rfft``/``irfft``/``polar`` as torch's own functions with torch's gradient, and
    the product between them had Thunder's unconjugated one (plain thunder.jit: both gradients wrong)."""
    def inputs():
        g = torch.Generator().manual_seed(5)
        if program == "spectral":
            x = torch.randn(2, 8, generator=g).requires_grad_()
            w = torch.randn(5, dtype=torch.complex64, generator=g).requires_grad_()
            return [x, w], (x, w)
        theta = torch.randn(4, generator=g).requires_grad_()
        c = torch.randn(4, dtype=torch.complex64, generator=g).requires_grad_()
        return [theta, c], (theta, c)

    assert_matches_eager(_spectral_conv if program == "spectral" else _polar_rotation, inputs)

# ---- bug 2: a counter buffer of the module called, `self.n += 1`, in a training step


class _Counted(nn.Module):
    def __init__(self, sub=False):
        super().__init__()
        self.w = nn.Parameter(torch.linspace(0.5, 1.5, 4))
        self.register_buffer("n", torch.zeros(()))
        self.sub = nn.Module()
        self.sub.register_buffer("n", torch.zeros(()))
        self.on_sub = sub

    def forward(self, x):
        if self.on_sub:
            self.sub.n += 1
            self.sub.n.mul_(2)
            return x * self.w * self.sub.n
        self.n += 1
        return x * self.w * self.n


def _training_calls(m, f, calls=3):
    held = (m.n, m.sub.n)
    rows = []
    for i in range(calls):
        x = _rnd(3, 4, seed=10 + i).requires_grad_()
        out = f(x)
        (out * torch.arange(12.0).view(3, 4)).sum().backward()
        rows.append((out.detach(), x.grad, m.w.grad.clone(), m.n.clone(), m.sub.n.clone()))
    assert m.n is held[0] and m.sub.n is held[1]  # (eager's buffers stay the objects they were)
    return rows


@pytest.mark.parametrize("sub", [False, True])
def test_counter_buffer_iadd_in_training(sub):
    """``self.n += 1`` stores ``n`` onto itself: was refused as "rebinds the buffer 'n' to a view of memory the call
    was given" (plain thunder.jit runs it); functionalized_epilogue.py, Note [a buffer stored onto itself,
    functionalized]."""
    m = _Counted(sub)
    want = _training_calls(m, m)
    for schedule in SCHEDULES:
        m = _Counted(sub)
        got = _training_calls(m, fusion_alias.jit(m, backend="reference", schedule=schedule))
        for g, w in zip(got, want):
            for a, b in zip(g, w):
                torch.testing.assert_close(a, b)


def test_buffer_rebound_to_another_buffers_memory_still_refused():
    class Other(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(torch.ones(4))
            self.register_buffer("n", torch.zeros(()))
            self.register_buffer("m", torch.zeros(()))

        def forward(self, x):
            self.m = self.n.add_(1)  # (eager: m is n's tensor; a functionalized call would store a copy)
            return x * self.w

    with pytest.raises(AliasInputError, match="rebinds the buffer 'm'"):
        fusion_alias.jit(Other(), backend="reference")(torch.ones(4, requires_grad=True))


# ---- representative programs that pass (no bug found): optimizer steps over tied and overlapping lists


def _sgd(params, grads, bufs, lr: float, mom: float, wd: float, nesterov: bool):
    for p, g, b in zip(params, grads, bufs):
        d = g.add(p, alpha=wd)
        b.mul_(mom).add_(d)
        p.add_(d.add(b, alpha=mom) if nesterov else b, alpha=-lr)


def test_sgd_nesterov_tied_parameter_twice():
    def make():
        w, b = _rnd(4, 5, seed=1), _rnd(5, seed=2)
        gw = _rnd(4, 5, seed=3)
        return {"p": [w, b, w], "g": [gw, _rnd(5, seed=4), gw * 0.5], "buf": [torch.zeros(4, 5), torch.zeros(5), torch.zeros(4, 5)]}

    assert_steps_match(_sgd, make, lambda f, s, i: f(s["p"], s["g"], s["buf"], 0.1, 0.9, 0.01, True), calls=2)


def _adam(p, g, m, v, vmax, step: int, lr: float, b1: float, b2: float, wd: float):
    g = -g  # (maximize)
    p.mul_(1 - lr * wd)
    m.lerp_(g, 1 - b1)
    v.mul_(b2).addcmul_(g, g.conj(), value=1 - b2)
    torch.maximum(vmax, v, out=vmax)  # (amsgrad)
    denom = (vmax.sqrt() / math.sqrt(1 - b2 ** step)).add_(1e-8)
    p.addcdiv_(m, denom, value=-lr / (1 - b1 ** step))
    return p


def test_adamw_amsgrad_maximize():
    def make():
        return {"p": _rnd(6, 7, seed=7), "g": _rnd(6, 7, seed=8), "m": torch.zeros(6, 7), "v": torch.zeros(6, 7), "vmax": torch.zeros(6, 7)}

    assert_steps_match(_adam, make, lambda f, s, i: f(s["p"], s["g"], s["m"], s["v"], s["vmax"], i + 1, 1e-2, 0.9, 0.999, 0.1),
                       calls=2)


def _foreach_adamw(ps, gs, ms, vs, step: int, lr: float):
    torch._foreach_mul_(ps, 1 - lr * 0.1)
    torch._foreach_lerp_(ms, gs, 0.1)
    torch._foreach_mul_(vs, 0.99)
    torch._foreach_addcmul_(vs, gs, gs, 0.01)
    denom = torch._foreach_sqrt(vs)
    torch._foreach_div_(denom, math.sqrt(1 - 0.99 ** step))
    torch._foreach_add_(denom, 1e-8)
    torch._foreach_addcdiv_(ps, ms, denom, -lr / (1 - 0.9 ** step))


def test_foreach_adamw_packed_state_views():
    """m and v of both parameters are views of one packed state tensor."""
    def make():
        state = torch.zeros(2, 16)
        return {"p": [_rnd(3, 4, seed=9), _rnd(4, seed=10)], "g": [_rnd(3, 4, seed=11), _rnd(4, seed=12)],
                "m": [state[0, :12].view(3, 4), state[0, 12:]], "v": [state[1, :12].view(3, 4), state[1, 12:]], "state": state}

    assert_steps_match(_foreach_adamw, make, lambda f, s, i: f(s["p"], s["g"], s["m"], s["v"], i + 1, 1e-2))


def _clip(grads, max_norm: float):
    total = torch.stack([g.norm(2) for g in grads]).norm(2)
    coef = (max_norm / (total + 1e-6)).clamp(max=1.0)
    for g in grads:
        g.mul_(coef)
    return total


def test_grad_clipping_over_views_of_one_flat_buffer():
    """The list holds a row of an earlier entry: that row is scaled twice, as in eager."""
    def make():
        flat = _rnd(30, seed=3) * 3
        return {"flat": flat, "g": [flat[:20].view(4, 5), flat[20:], flat[:20].view(4, 5)[0]]}

    assert_steps_match(_clip, make, lambda f, s, i: f(s["g"], 1.0), calls=2)


def _ema_foreach(ema, ps, d: float):
    torch._foreach_lerp_(ema, ps, 1 - d)


def test_ema_foreach_lerp_tied():
    def make():
        w = _rnd(3, 4, seed=1)
        e = w.clone() * 0.5
        return {"e": [e, e], "p": [w, w]}

    assert_steps_match(_ema_foreach, make, lambda f, s, i: f(s["e"], s["p"], 0.9))


# ---- BatchNorm statistics, KV-cache decode, recurrent state, online softmax


def _bn(x, w, b, rm, rv, nbt, momentum: float | None):
    nbt.add_(1)
    ema = 1.0 / nbt.to(torch.float32) if momentum is None else momentum
    mean = x.mean(dim=(0, 2))
    var = x.var(dim=(0, 2), correction=0)
    n = x.numel() / x.shape[1]
    rm.mul_(1 - ema).add_(mean * ema)
    rv.mul_(1 - ema).add_(var * (n / (n - 1)) * ema)
    return (x - mean[None, :, None]) / torch.sqrt(var[None, :, None] + 1e-5) * w[None, :, None] + b[None, :, None]


@pytest.mark.parametrize("momentum", [0.1, None])
def test_batchnorm_running_stats_with_gradients(momentum):
    def inputs():
        w, b = _rnd(3, seed=2).requires_grad_(), _rnd(3, seed=3).requires_grad_()
        nbt = torch.tensor(4, dtype=torch.long)
        return [w, b], (_rnd(4, 3, 5, seed=1), w, b, torch.zeros(3), torch.ones(3), nbt, momentum)

    assert_matches_eager(_bn, inputs)


def _decode(cache, kc, vc, q, k, v, pos: int):
    kc.narrow(2, pos, 1).copy_(k.unsqueeze(2))
    vc.select(2, pos).copy_(v)
    s = (q @ cache[0][:, :, : pos + 1].transpose(-1, -2)) / 2.0
    return torch.softmax(s, -1) @ cache[1][:, :, : pos + 1], kc[:, :, : pos + 1]


def test_kv_cache_decode_through_views_of_one_cache():
    def make():
        c = torch.zeros(2, 2, 2, 6, 4)
        return {"c": c, "kc": c[0], "vc": c[1]}

    def step(f, s, i):
        q, k, v = _rnd(2, 2, 1, 4, seed=10 + i), _rnd(2, 2, 4, seed=20 + i), _rnd(2, 2, 4, seed=30 + i)
        return f(s["c"], s["kc"], s["vc"], q, k, v, i)

    assert_steps_match(_decode, make, step, calls=4)


def _lstm(x, h, c, wi, wh, b):
    i, f, g, o = (x @ wi + h @ wh + b).chunk(4, -1)
    c.mul_(torch.sigmoid(f)).add_(torch.sigmoid(i) * torch.tanh(g))
    h.copy_(torch.sigmoid(o) * torch.tanh(c))
    return h


def test_lstm_state_in_place_views_of_one_state():
    def make():
        state = torch.zeros(2, 2, 3)
        return {"s": state, "h": state[0], "c": state[1], "wi": _rnd(4, 12, seed=16), "wh": _rnd(3, 12, seed=17), "b": _rnd(12, seed=18)}

    assert_steps_match(_lstm, make, lambda f, s, i: f(_rnd(2, 4, seed=i), s["h"], s["c"], s["wi"], s["wh"], s["b"]), calls=3)


def _online_softmax(x, m, l, acc, v):
    for c in range(0, x.shape[-1], 2):
        mn = torch.maximum(m, x[..., c:c + 2].amax(-1))
        scale = torch.exp(m - mn)
        p = torch.exp(x[..., c:c + 2] - mn[..., None])
        l.mul_(scale).add_(p.sum(-1))
        acc.mul_(scale[..., None]).add_(p @ v[c:c + 2])
        m.copy_(mn)
    return acc / l[..., None]


def test_online_softmax_running_max_and_sum():
    def make():
        return {"x": _rnd(3, 6, seed=14), "m": torch.full((3,), -float("inf")), "l": torch.zeros(3), "acc": torch.zeros(3, 4),
                "v": _rnd(6, 4, seed=15)}

    assert_steps_match(_online_softmax, make, lambda f, s, i: f(s["x"] + i, s["m"], s["l"], s["acc"], s["v"]), calls=2)


# ---- training: rotary in place on views of a fused qkv activation, tied weights passed twice


def _qkv_rope(x, w, cos, sin):
    qkv = (x @ w).view(2, 3, 3, 2, 4)
    q, k, v = qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2]
    for t in (q, k):
        a, b = t[..., :2].clone(), t[..., 2:].clone()
        t[..., :2].copy_(a * cos - b * sin)
        t[..., 2:].copy_(b * cos + a * sin)
    s = (q.transpose(1, 2) @ k.transpose(1, 2).transpose(-1, -2)).softmax(-1)
    return s @ v.transpose(1, 2), qkv


def test_rotary_in_place_on_fused_qkv_views_with_gradients():
    ang = torch.arange(3).float().view(1, 3, 1, 1) * torch.tensor([0.3, 0.7]).view(1, 1, 1, 2)

    def inputs():
        w = _rnd(5, 24, seed=2).requires_grad_()
        return [w], (_rnd(2, 3, 5, seed=1), w, ang.cos(), ang.sin())

    assert_matches_eager(_qkv_rope, inputs)


def test_tied_embedding_and_head_passed_twice():
    def fn(emb_w, head_w, idx):
        return F.embedding(idx, emb_w) @ head_w.t()

    def inputs():
        w = _rnd(10, 6, seed=8).requires_grad_()
        return [w], (w, w, torch.tensor([1, 2, 2]))

    assert_matches_eager(fn, inputs)


# ---- bug 3: a None argument (a parameter with no gradient this step), then a tensor again


def _sgd_skipping_none(ps, gs, bufs, lr: float, mom: float):
    for p, g, b in zip(ps, gs, bufs):
        if g is None:
            continue
        b.mul_(mom).add_(g)
        p.add_(b, alpha=-lr)


def test_none_gradient_pattern_changing_between_calls():
    """Thunder's prologue checks nothing for a None argument: the program compiled for ``[g0, None]`` was reused
    for ``[g0, g1]``, and ``p1`` was not updated (plain thunder.jit too; guard.py, Note [an argument that is
    None])."""
    def make():
        return {"p": [_rnd(3, 3, seed=1), _rnd(3, seed=2)], "g": [_rnd(3, 3, seed=3), _rnd(3, seed=4)],
                "b": [torch.zeros(3, 3), torch.zeros(3)]}

    def step(f, s, i):
        return f(s["p"], [s["g"][0], None if i % 2 else s["g"][1]], s["b"], 0.1, 0.9)

    assert_steps_match(_sgd_skipping_none, make, step, calls=3)


def test_none_argument_then_tensor():
    def f(g, lr: float):
        if g is None:
            return None
        return g.add_(lr)

    jitted = fusion_alias.jit(f)
    x = torch.zeros(2)
    for arg in (x, None, x, None, x):
        jitted(arg, 0.5)
    torch.testing.assert_close(x, torch.full((2,), 1.5))


class _MaskedAttention(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(2)
        self.qkv = nn.Linear(4, 12)

    def forward(self, x, mask=None, bias=None):
        q, k, v = self.qkv(x).chunk(3, -1)
        s = q @ k.transpose(-1, -2)
        if mask is not None:
            s.masked_fill_(mask, -1e9)
        if bias is not None:
            s += bias
        return s.softmax(-1) @ v


def test_optional_attention_mask_none_then_given():
    """``m(x, mask=m)``, ``m(x, mask=None)``, ``m(x, mask=m)``: the third call ran the program compiled without the
    mask (outputs and gradients wrong; plain thunder.jit too; guard.py, Note [an argument that is None])."""
    mask = torch.ones(3, 3, dtype=torch.bool).triu(1)
    bias = _rnd(3, 3, seed=9)
    kwargs = [dict(mask=mask, bias=bias), dict(mask=None, bias=bias), dict(mask=mask, bias=bias)]

    def run(call):
        m = _MaskedAttention()
        rows = []
        for i, kw in enumerate(kwargs):
            x = _rnd(2, 3, 4, seed=i).requires_grad_()
            out = call(m)(x, **kw)
            out.sum().backward()
            rows.append((out.detach(), x.grad, m.qkv.weight.grad.clone()))
        return rows

    want = run(lambda m: m)
    for schedule in ("reads-first", "writes-first"):
        jitted = {}
        for g, w in zip(run(lambda m: jitted.setdefault(0, fusion_alias.jit(m, backend="reference", schedule=schedule))), want):
            for a, b in zip(g, w):
                torch.testing.assert_close(a, b)
