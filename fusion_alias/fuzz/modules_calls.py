"""The calls of a ``modules`` program (``gen_modules.py``, Note [module programs]): each later call's
arguments and global as views of the module's state or of each other, and the state rebound before it
(Note [state rebound between calls])."""

from __future__ import annotations

import random

from fusion_alias.fuzz.program import Variant

# ``mod`` below is a ``gen_modules._Module`` (what a program's module holds); not imported: gen_modules imports this


# argument expressions of the later calls, over this call's module ``m`` and the fresh bases x0 (a), x1 (k), x2 (GT)
def _a_views(mod) -> list[str]:
    B = mod.batch
    out = [f"{mod.data('m.w')}[0:{B}]", f"m.w[0:{B}]", "x0", "x1.expand(%d, %d)" % (B, mod.c)]
    if "kv" in mod.buffers and B <= mod.rows:
        out.append(f"m.kv[0:{B}]")
    if "ema" in mod.buffers and mod.ema_shape == "mat":
        out.append(f"m.ema[0:{B}]")
    return out


def _k_views(mod) -> list[str]:
    out = ["m.b", "m.u", mod.data("m.b"), "m.flat[0:%d]" % mod.c, "m.w[1]", "x1", "a[0]"]
    if "kv" in mod.buffers:
        out += ["m.kv[1]", "m.kv[0]"]
    out += [f"m.{b}" for b in ("run_mean", "run_var") if b in mod.buffers]
    if "ema" in mod.buffers:
        out.append("m.ema" if mod.ema_shape == "vec" else "m.ema[0]")
    return out


def _g_views(mod) -> list[str]:
    out = ["m.u", "m.b.detach()", "x2", "x1", "m.flat[%d:%d]" % (mod.c * mod.c + mod.c, mod.c * mod.c + 2 * mod.c)]
    if "kv" in mod.buffers:
        out.append("m.kv[1]")
    out += [f"m.{b}" for b in ("run_mean", "run_var") if b in mod.buffers]
    return out


def _variants(rng: random.Random, mod, has_global: bool, between: random.Random) -> tuple[Variant, ...]:
    out = []
    for _ in range(2):
        for _attempt in range(10):
            a = rng.choice(_a_views(mod)) if rng.random() < 0.5 else "x0"
            k = rng.choice(_k_views(mod)) if rng.random() < 0.7 else "x1"
            g = rng.choice(_g_views(mod)) if has_global and rng.random() < 0.7 else "x2"
            if (a, k, g) != ("x0", "x1", "x2"):
                break
        out.append(Variant(args=(("a", a), ("k", k)), hidden=(("GT", g),) if has_global else (),
                           state=_rebinds(between, mod) + mod.outside.rebinds()))
    return tuple(out)


def _rebinds(s: random.Random, mod) -> tuple[str, ...]:
    """Statements that rebind the module's state between calls, drawn from ``s`` (Note [state rebound between
    calls]); usually none. (The Python state of modules_outside.py follows them, from a stream of its own.)"""
    if s.random() >= 0.35:
        return ()
    grad = "requires_grad={}.requires_grad"
    forms = ["m.u = k", "m.u = m.b.detach()", "m.u = m.u.clone()"]
    if mod.holder != "param":  # (else w and b are plain attributes, views of the Parameter flat)
        forms += [f"m.b = torch.nn.Parameter(m.u.detach(), {grad.format('m.b')})",
                  f"m.b = torch.nn.Parameter(m.b.detach().clone(), {grad.format('m.b')})",
                  f"m.w = torch.nn.Parameter(m.w.detach().clone(), {grad.format('m.w')})"]
    if "run_mean" in mod.buffers:
        forms += ["m.run_mean = m.b.detach()", "m.run_mean = k", "m.run_mean = m.u"]
    if "run_var" in mod.buffers:
        forms += ["m.run_var = m.run_var.clone()", "m.run_var = m.u"]
    if "ema" in mod.buffers:
        forms += ["m.ema = m.w.detach()" if mod.ema_shape == "mat" else "m.ema = m.b.detach()", "m.ema = m.ema.clone()"]
    if "kv" in mod.buffers:
        forms += ["m.kv = m.kv.clone()", "m.kv = torch.cat([m.kv[1:], m.kv[:1]])"]
    if mod.tie == "lin":
        forms += [f"m.lin.weight = torch.nn.Parameter(m.w.detach().clone(), {grad.format('m.w')})", "m.lin.weight = m.w",
                  f"m.lin.weight = torch.nn.Parameter(m.flat.detach()[0:{mod.c * mod.c}].view({mod.c}, {mod.c}), "
                  f"{grad.format('m.w')})"]
    if mod.tie == "head":  # (a Parameter where w is one: a plain tensor there raises in eager, in make_inputs)
        forms += ["m.head = m.w.detach()" if mod.holder == "param" else
                  f"m.head = torch.nn.Parameter(m.w.detach().clone(), {grad.format('m.w')})"]
    if mod.scale:
        forms += ["m.scale = k", "m.scale = m.u"]
    return tuple(dict.fromkeys(s.choice(forms) for _ in range(s.choice((1, 1, 2)))))
