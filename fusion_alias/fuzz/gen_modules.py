"""The ``modules`` generator: tensors reached through an ``nn.Module`` and its attributes,
globals, grad-mode context managers inside the program, and aliasing that changes
between calls of one module object.

Note [module programs]
    Every other generator passes tensors as arguments (or puts one behind a global, a
    closure or a one-buffer module: ``hidden``). A real model reaches most of its
    tensors through ``self``, and keeps them from call to call. A program of this
    generator is

        class Net(torch.nn.Module)     built from a seeded generator: one flat tensor
                                       ``flat`` (a registered buffer, a plain attribute,
                                       or itself the Parameter), parameters ``w`` (c, c)
                                       and ``b`` (c,) that are views of it (nn.Parameter
                                       shares its data's memory), a buffer ``u`` that is a
                                       view of it too; a tied weight (``self.lin.weight =
                                       self.w`` or ``self.head = self.w``); some of the
                                       buffers ``ema``, ``mom``, ``run_mean``, ``run_var``,
                                       ``steps`` (int64), ``kv`` (a KV cache), and a plain
                                       tensor attribute ``scale``;
        a forward                      statements over ``m.<state>``, the arguments
                                       ``a`` (B, c), ``k`` (c,) and a global ``GT`` (c,):
                                       optimizer-like updates of the parameters (under
                                       ``torch.no_grad()``, through ``.data``, reading
                                       ``.grad`` with ``--grad``), EMA and running
                                       statistics, KV-cache writes with an int, a slice,
                                       ``index_copy_`` or a tensor index, ``.data`` reads,
                                       statements under ``torch.no_grad()``,
                                       ``torch.enable_grad()`` or
                                       ``torch.set_grad_enabled(False)``;
        how the module is reached      ``entry``: the jitted callable is the module itself
                                       ("self"), a function taking it as its first argument
                                       ("arg"), or a function reading the global ``MOD``
                                       ("global");
        the calls                      one module object per side (eager, jitted), built
                                       once and kept over every call, so its state carries
                                       from call to call; the arguments and ``GT`` are made
                                       fresh for each call with its own aliasing (variant 0:
                                       their own memory; later variants: views of the
                                       module's state, ``m.kv[1]``, ``m.b``, ``m.w[0:B]``,
                                       or of each other), called 0, 0, 1, 2, 0; some
                                       programs are called under ``torch.no_grad()``.

    The oracle (``module_driver`` below, in the rendered source) compares after every call
    the outputs, the arguments, the global, every tensor of the module's state (every
    parameter, buffer and tensor attribute, of submodules too, tied names each), and the
    state's layout: which tensors share storage, at what offset, with what strides, which
    names are one object, and their ``requires_grad``. With ``--grad`` it back-propagates
    a fixed weighting of the outputs after every call and compares the parameters'
    accumulated ``.grad`` and the arguments' leaves' gradients. The eager side is a second
    module built by the same constructor: ``copy.deepcopy`` of such a module is *not* a
    fresh copy of it, since deep-copying a Parameter copies its data apart from the flat
    buffer it was a view of. After a call that raised (on both sides, or a refusal) no
    later call is compared: the two modules' states may differ by what ran before the raise.

    The generator grows the body against eager runs of every call (``_eager_calls``): a
    statement eager rejects on the first call is dropped (kept with a small probability as
    the last one: the jitted program must raise too), and so is one whose in-place op
    reads memory it writes at other indices without eager raising (Note [partial overlap
    within one op], hazard.py): such a result is eager's iteration order, not a value.
    Any clear refusal of fusion_alias counts as refused (``Program.refusals`` is None).

Note [rebinding a buffer]
    Session 16: some updates of the state rebind it to a new tensor instead of writing it in place: ``m.ema = m.ema *
    0.9 + src.detach() * 0.1``, ``m.run_mean = m.b.detach()`` (the buffer now shares a parameter's memory, into the next
    call), ``m.steps = m.steps + 1``, ``m.kv = torch.cat([m.kv[1:], a[0:1].detach()])``, ``m.scale = m.scale * 0.9`` (a
    plain tensor attribute, not a buffer). With ``entry`` "self" the module rebound is the one called; with "arg" and
    "global" it is not (Thunder 0.2.6 asserts there: Note [a buffer rebound on a module the call was given],
    dropped_attributes.py). Drawn from ``_Body.spell``, a generator seeded from ``rng``'s state without drawing from it:
    a program none of whose statements is spelled so is the one it was. One that has one may grow differently after it:
    which later statements eager rejects or leaves ill-defined depends on the memory the state now has.

Note [special values in the module's state]
    Session 32. With ``--special-values`` (source.py, Note [special values in the inputs]) ``Net.__init__`` passes
    ``flat`` (so ``w``, ``b``, ``u``), every buffer and ``scale`` through ``special()``; a third of the forward's
    number operands become ``nan``, ``inf``, ``-inf``, ``-0.0``, ``1e300`` or ``2**63``, and half the
    ``m.steps.add_(1)`` add an int64 extreme, ``2**63`` (wraps) or ``2**64`` (eager raises), drawn from
    ``_Body.special``, a stream of its own, after ``rng``'s draw: without the option every program is the one it
    was (tests/test_session32_generators.py).

Note [identity tests of the state]
    Session 18: a compute statement's value may be spelled times a choice on an identity test (``(x @ m.w.t() + k) *
    (2.0 if m.w is m.lin.weight else 1.0)``, ``id(k) == id(m.b)``, ``GT is not k``): of a tied weight and its other name
    (tied, untied and tied again between calls: Note [state rebound between calls]), of an argument and the state or
    another argument (one object in the later variants that pass ``m.b`` or ``a[0]``), or of two names of the state.
    Only the value changes; drawn from ``_Body.ident``, seeded from ``rng``'s state without drawing from it: every
    program is the one it was but for these spellings (the tensor_identity.py classes, Note [identity answers are guarded]).

Note [state rebound between calls]
    Session 17: before the calls of variants 1 and 2 (after their arguments are made), some programs rebind a parameter
    or buffer of the module or of its submodule ``lin`` outside the compiled function (``Variant.state``): a buffer to a
    parameter's memory or the call's argument (``m.run_mean = m.b.detach()``, ``m.u = k``), a parameter to a buffer's
    memory or a copy of its own (``m.b = torch.nn.Parameter(m.u.detach(), ...)``: the tie of ``w`` with ``lin.weight``
    or ``head`` broken), the submodule's weight untied or tied again, a tensor attribute to the argument. The module is
    kept over the calls: a rebinding holds for every later call, and every read must see it (api.py, same Note). Shapes
    and dtypes stay. Drawn from a generator seeded from ``rng``'s state without drawing from it: a program with none is
    the one it was; one with some may grow differently (statements the new memory makes eager reject or ill-defined are
    dropped). Session 32: Python state the forward branches on, changed there too (modules_outside.py).
"""

from __future__ import annotations

import itertools
import random
import warnings

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from fusion_alias.fuzz import source
from fusion_alias.fuzz.program import Program, Stmt
from fusion_alias.fuzz.modules_source import program_source  # (the rendering: modules_source.py)
from fusion_alias.fuzz.modules_calls import _variants  # (each call's aliasing and rebinding: modules_calls.py)
from fusion_alias.fuzz import modules_outside  # (Python state the forward branches on: modules_outside.py)

ENTRIES = ("self", "arg", "global")
FLAT_HOLDERS = ("buffer", "attr", "param")
TIES = ("none", "lin", "head")
BUFFERS = ("ema", "mom", "run_mean", "run_var", "steps", "kv")
_CONSTS = (0.9, 0.5, 0.1, -0.25, 2.0, 0.99)
_GRAD_MODES = ("with torch.no_grad(): ", "with torch.enable_grad(): ", "with torch.set_grad_enabled(False): ")


class _Module:
    """What a program's module holds (drawn once per program)."""

    def __init__(self, rng: random.Random, grad: bool):
        self.c = rng.choice((3, 4))
        self.batch = rng.choice((2, 3))
        self.rows = rng.choice((3, 4))  # of the KV cache
        self.holder = rng.choice(FLAT_HOLDERS)
        self.params_grad = rng.random() < (0.85 if grad else 0.5)
        self.tie = rng.choice(TIES) if self.holder != "param" else rng.choice(("none", "head"))
        self.buffers = [b for b in BUFFERS if rng.random() < 0.5] or [rng.choice(BUFFERS)]
        self.ema_shape = rng.choice(("mat", "vec"))
        self.scale = rng.random() < 0.4
        # Thunder 0.2.6 has no Tensor.data ("Unknown attribute data", plain thunder.jit too): in a few programs only
        self.data_ok = rng.random() < 0.15
        self.seed = rng.randrange(2**31)
        self.outside = modules_outside.draw(rng)  # (Note [Python state a module program branches on])

    # the state a statement may name, by shape
    def mats(self) -> list[str]:
        return ["m.w"] + [f"m.{b}" for b in ("ema", "mom") if b in self.buffers and (b != "ema" or self.ema_shape == "mat")]

    def vecs(self) -> list[str]:
        out = ["m.b", "m.u"] + [f"m.{b}" for b in ("run_mean", "run_var") if b in self.buffers]
        if "ema" in self.buffers and self.ema_shape == "vec":
            out.append("m.ema")
        if self.scale:
            out.append("m.scale")
        return out

    def data(self, x: str) -> str:
        """``x.data``, or where this program does not use ``.data``, ``x.detach()``."""
        return f"{x}.data" if self.data_ok else f"{x}.detach()"

    def weight(self, rng: random.Random) -> str:
        """An expression for the weight matrix (tied names too)."""
        choices = ["m.w", "m.w"]
        if self.tie == "lin":
            choices.append("m.lin.weight")
        if self.tie == "head":
            choices.append("m.head")
        return rng.choice(choices)

    def source(self) -> str:
        c = self.c
        n = c * c + 2 * c
        sp = (lambda e: f"special({e})") if source.SPECIAL_VALUES else (lambda e: e)  # (Note [special values in the module's state])
        lines = [
            "class Net(torch.nn.Module):",
            "    def __init__(self, g):",
            "        super().__init__()",
        ] + (["    " + ln for ln in source._SPECIAL_SOURCE] if source.SPECIAL_VALUES else []) + [
            f"        flat = {sp(f'torch.rand({n}, generator=g) * 2 - 1')}",
        ]
        views = {"w": f"flat[0:{c * c}].view({c}, {c})", "b": f"flat[{c * c}:{c * c + c}]", "u": f"flat[{c * c + c}:{n}]"}
        pg = self.params_grad
        if self.holder == "buffer":
            lines.append('        self.register_buffer("flat", flat)')
        elif self.holder == "attr":
            lines.append("        self.flat = flat")
        if self.holder == "param":  # the flat tensor is the Parameter; w and b are views of it (FSDP-like)
            lines.append(f"        self.flat = torch.nn.Parameter(flat, requires_grad={pg})")
            lines.append(f"        self.w = self.flat[0:{c * c}].view({c}, {c})")
            lines.append(f"        self.b = self.flat[{c * c}:{c * c + c}]")
        else:
            lines.append(f"        self.w = torch.nn.Parameter({views['w']}, requires_grad={pg})")
            lines.append(f"        self.b = torch.nn.Parameter({views['b']}, requires_grad={pg})")
        lines.append(f'        self.register_buffer("u", flat[{c * c + c}:{n}])')
        if self.tie == "lin":
            lines.append(f"        self.lin = torch.nn.Linear({c}, {c}, bias=False)")
            lines.append("        self.lin.weight = self.w")
        elif self.tie == "head":
            lines.append("        self.head = self.w")
        for b in self.buffers:
            init = {
                "ema": f"torch.rand({c}, {c}, generator=g)" if self.ema_shape == "mat" else f"torch.rand({c}, generator=g)",
                "mom": f"torch.zeros({c}, {c})",
                "run_mean": f"torch.zeros({c})",
                "run_var": f"torch.ones({c})",
                "steps": "torch.zeros((), dtype=torch.int64)",
                "kv": f"torch.rand({self.rows}, {c}, generator=g)",
            }[b]
            lines.append(f'        self.register_buffer("{b}", {sp(init)})')
        if self.scale:
            lines.append(f"        self.scale = {sp(f'torch.rand({c}, generator=g) + 0.5')}")
        return self.outside.source("\n".join(lines) + "\n")


class _Body:
    """Statement maker for one program's forward."""

    def __init__(self, rng: random.Random, mod: _Module, grad: bool, has_global: bool):
        self.rng, self.mod, self.grad, self.has_global = rng, mod, grad, has_global
        self.batch_vals = ["a"]  # (B, c) values
        self.counter = 0
        self.spell = random.Random(str(rng.getstate()[1][:16]) + ":spell")  # Note [rebinding a buffer]
        self.ident = random.Random(str(rng.getstate()[1][:16]) + ":identity")  # Note [identity tests of the state]
        self.special = random.Random(str(rng.getstate()[1][:16]) + ":special")  # Note [special values in the module's state]

    def rebind(self, kind: str, form: str) -> str:
        """``form``, or, drawn from ``spell``, a statement of the same kind that rebinds the state it updates
        to a new tensor (Note [rebinding a buffer])."""
        mod, s = self.mod, self.spell
        if s.random() >= 0.3:
            return form
        c = s.choice(_CONSTS)
        forms = []
        if kind == "ema" and "ema" in mod.buffers:
            src = s.choice(mod.mats() if mod.ema_shape == "mat" else mod.vecs() + ["k"])
            if src == "m.ema":
                src = "m.w" if mod.ema_shape == "mat" else "k"
            forms += [f"m.ema = m.ema * {c} + {src}.detach() * 0.1", f"m.ema = {src}.detach()",
                      f"m.ema = {src}.detach() * 1.0"]
        if kind == "ema" and "mom" in mod.buffers:
            forms += [f"m.mom = m.mom * {c} + m.w.detach()", "m.mom = m.w.detach()"]
        if kind == "stats":
            x = s.choice(self.batch_vals)
            if "run_mean" in mod.buffers:
                forms += [f"m.run_mean = m.run_mean * {c} + {x}.detach().mean(0) * 0.1", "m.run_mean = m.b.detach()",
                          f"m.run_mean = {x}[0].detach()"]
            if "steps" in mod.buffers:
                forms += ["m.steps = m.steps + 1"]
            if mod.scale:  # a plain tensor attribute, not a buffer
                forms += [f"m.scale = m.scale * {c}"]
        if kind == "kv" and "kv" in mod.buffers:
            i = s.randrange(mod.rows)
            forms += [f"m.kv = m.kv.index_copy(0, torch.tensor([{i}]), k.detach()[None])", "m.kv = m.kv * 0.5",
                      f"m.kv = torch.cat([m.kv[1:], {s.choice(self.batch_vals)}[0:1].detach()])"]
        return s.choice(forms) if forms else form

    def identity_factor(self, form: str) -> str:
        """``form`` (a float result), or, drawn from ``ident``, ``form`` times a choice on an identity test of two
        tensors of the state or the arguments (Note [identity tests of the state])."""
        mod, s = self.mod, self.ident
        if s.random() >= 0.25:
            return form
        tied = [("m.w", "m.lin.weight")] if mod.tie == "lin" else [("m.w", "m.head")] if mod.tie == "head" else []
        state = ["m.w", "m.b", "m.u"] + [f"m.{b}" for b in mod.buffers if b != "steps"] + [v for _, v in tied]
        args = ["a", "k"] + (["GT"] if self.has_global else [])
        r = s.random()
        if tied and r < 0.4:
            v, w = s.choice(tied)
        elif r < 0.8:
            v, w = s.choice(args), s.choice(state + args)
        else:
            v, w = s.sample(state, 2)
        if v == w:
            w = "m.b" if v != "m.b" else "m.u"
        if s.random() < 0.5:
            v, w = w, v
        test = s.choice((f"{v} is {w}", f"{v} is not {w}", f"id({v}) == id({w})"))
        return f"({form}) * ({s.choice((2.0, -1.0, 3.0))} if {test} else 1.0)"

    def tmp(self) -> str:
        self.counter += 1
        return f"t{self.counter - 1}"

    def c(self) -> float | str:
        c = self.rng.choice(_CONSTS)
        if source.SPECIAL_VALUES and self.special.random() < 1 / 3:  # Note [special values in the module's state]
            return self.special.choice(("float('nan')", "float('inf')", "-float('inf')", "-0.0", "1e300", "2**63"))
        return c

    def vec(self) -> str:
        pool = self.mod.vecs() + ["k"] + (["GT"] if self.has_global else [])
        return self.rng.choice(pool)

    def bval(self) -> str:
        return self.rng.choice(self.batch_vals)

    def mode(self, p: float) -> str:
        return self.rng.choice(_GRAD_MODES) if self.rng.random() < p else ""

    def statement(self) -> tuple[Stmt, str | None]:
        """(statement, the (B, c) value it makes or None)."""
        rng, mod = self.rng, self.mod
        if mod.outside.wants():
            return mod.outside.statement(self)
        kind = rng.choices(("compute", "ema", "stats", "optim", "kv", "global", "arg"), (5, 2, 2, 3, 3, 1, 1))[0]
        c, B = mod.c, mod.batch
        if kind == "compute":
            x, w, v = self.bval(), mod.weight(rng), self.vec()
            forms = [f"{x} @ {w}.t() + {v}", f"({x} * {v}).tanh()", f"{x} @ {mod.data(w)}.t()", f"{x} - {v}.detach()",
                     f"{x} * {w}.detach().sum(0)", f"{x} @ {rng.choice(mod.mats())}.t()", f"{x} * {mod.data(v)}"]
            if mod.tie == "lin":
                forms.append(f"m.lin({x})")
            if "kv" in mod.buffers:
                forms.append(f"({x} @ m.kv.t()).softmax(-1) @ m.kv")
            t = self.tmp()
            mode, form = self.mode(0.3), rng.choice(forms)
            return Stmt(f"{mode}{t} = {self.identity_factor(form)}", target=t), t
        if kind == "ema" and ("ema" in mod.buffers or "mom" in mod.buffers):
            if "ema" in mod.buffers:
                src = mod.weight(rng) if mod.ema_shape == "mat" else rng.choice(("m.b", "m.u", "k"))
                form = rng.choice((f"m.ema.mul_({self.c()}).add_({src}.detach(), alpha=0.1)",
                                   f"m.ema.lerp_({mod.data(src)}, 0.1)", f"m.ema.copy_(m.ema * 0.9 + {src}.detach() * 0.1)",
                                   f"m.ema.mul_(0.9).add_({src}, alpha=0.1)"))
            else:
                form = rng.choice((f"m.mom.mul_(0.9).add_({mod.weight(rng)})", f"m.mom.mul_(0.9).add_({mod.data(mod.weight(rng))})"))
            return Stmt(f"{self.mode(0.6)}{self.rebind('ema', form)}", writes="m"), None
        if kind == "stats" and any(b in mod.buffers for b in ("run_mean", "run_var", "steps")):
            x = self.bval()
            forms = []
            if "run_mean" in mod.buffers:
                forms += [f"m.run_mean.mul_(0.9).add_({x}.detach().mean(0), alpha=0.1)", f"m.run_mean.lerp_({x}.detach().mean(0), 0.1)"]
            if "run_var" in mod.buffers:
                forms += [f"m.run_var.mul_(0.9).add_({x}.detach().var(0), alpha=0.1)"]
            if "steps" in mod.buffers:
                forms += ["m.steps.add_(1)", "m.steps += 1"]
            mode, form = self.mode(0.5), rng.choice(forms)
            if form == "m.steps.add_(1)" and source.SPECIAL_VALUES and self.special.random() < 0.5:
                big = self.special.choice(("2**63 - 1", "-2**63", "2**63", "2**64", "1e300", "-1"))
                form = f"m.steps.add_({big})"  # (wraps, or eager raises: Note [special values in the module's state])
            return Stmt(f"{mode}{self.rebind('stats', form)}", writes="m"), None
        if kind == "optim":
            w = rng.choice(("m.w", "m.b") + (("m.head",) if mod.tie == "head" else ()) + (("m.lin.weight",) if mod.tie == "lin" else ()))
            other = rng.choice(mod.mats()) if w != "m.b" else self.vec()
            forms = [f"with torch.no_grad(): {w}.mul_({self.c()})",
                     f"with torch.no_grad(): {w}.sub_({other}, alpha=0.1)",
                     f"with torch.no_grad(): m.flat.mul_({self.c()})", f"with torch.no_grad(): m.u.add_({self.vec()})",
                     f"with torch.no_grad(): m.flat[{rng.randrange(c)}:{c + rng.randrange(c)}].add_(1.0)"]
            if mod.data_ok:  # writes through .data, under grad mode
                forms += [f"{w}.data.mul_({self.c()})", f"{w}.data.add_({other}, alpha=-0.05)", f"m.flat.data.mul_({self.c()})"]
            if self.grad:  # an optimizer step inside forward: the gradient of the previous call
                forms.append(f"with torch.no_grad(): {w}.sub_({w}.grad if {w}.grad is not None else {w} * 0, alpha=0.1)")
            if rng.random() < 0.1:  # under grad mode: eager rejects it where w requires grad (a leaf or its view)
                forms.append(f"{w}.mul_({self.c()})")
            return Stmt(rng.choice(forms), writes="m"), None
        if kind == "kv" and "kv" in mod.buffers:
            T = mod.rows
            i, j = rng.sample(range(T), 2)
            x = self.bval()
            val = rng.choice(("k", f"{x}[0]", f"{x}[0].detach()", "k * 2"))
            forms = [f"m.kv[{i}] = {val}", f"m.kv[{i}].copy_({val})", f"m.kv.index_copy_(0, torch.tensor([{i}]), {val}[None])",
                     f"m.kv[torch.tensor([{i}, {j}])] = torch.stack([{val}, {val} * 0.5])", f"m.kv.mul_({self.c()})"]
            if B <= T:
                s = rng.randrange(T - B + 1)
                forms.append(f"m.kv[{s}:{s + B}] = {x}.detach()")
            return Stmt(f"{self.mode(0.4)}{self.rebind('kv', rng.choice(forms))}", writes="m"), None
        if kind == "global" and self.has_global:
            form = rng.choice((f"GT.mul_({self.c()})", f"GT.add_({rng.choice(mod.vecs())})", f"GT.copy_({self.bval()}[0].detach())",
                               "GT.add_(k)"))
            return Stmt(f"{self.mode(0.3)}{form}", writes="GT"), None
        if kind == "arg":
            form = rng.choice((f"k.mul_({self.c()})", f"a.add_({self.c()})", f"k.add_({rng.choice(mod.vecs())}.detach())"))
            return Stmt(f"{self.mode(0.5)}{form}", writes=form[0]), None
        return self.statement()


def modules_program(name: str, rng: random.Random, grad: bool = False, max_stmts: int = 8) -> Program:
    """A program of Note [module programs], grown against eager runs of its calls."""
    for _ in range(20):
        mod = _Module(rng, grad)
        has_global = rng.random() < 0.4
        entry = rng.choice(ENTRIES)
        between = random.Random(str(rng.getstate()[1][:16]) + ":between")  # Note [state rebound between calls]
        p = Program(
            name=name,
            input_seed=rng.randrange(2**31),
            bases=(("x0", (mod.batch, mod.c)), ("x1", (mod.c,))) + ((("x2", (mod.c,)),) if has_global else ()),
            args=(("a", "x0"), ("k", "x1")),
            stmts=(),
            returns=(),
            kind="modules",
            hidden=(("GT", "global", "x2"),) if has_global else (),
            variants=_variants(rng, mod, has_global, between),
            no_grad_call=rng.random() < 0.2,
            tags=(("module_src", mod.source()), ("entry", entry), ("module_seed", str(mod.seed))),
        )
        body = _Body(rng, mod, grad, has_global)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            p = _grow(p, body, rng, max_stmts)
        if p is not None:
            return p
    raise RuntimeError(f"fuzz: no valid modules program for {name}")


def _grow(p: Program, body: _Body, rng: random.Random, max_stmts: int) -> Program | None:
    stmts: list[Stmt] = []
    n = rng.randint(3, max_stmts)
    attempts = 0
    while len(stmts) < n and attempts < 12 * n:
        attempts += 1
        s, made = body.statement()
        q = p.replace(stmts=tuple(stmts + [s]), returns=_returns(body, stmts + [s], rng, final=False))
        outcome = _eager_calls(q)
        if outcome is None or outcome[0] != "ok" or outcome[1] != "ok":
            if outcome is not None and outcome[0] == "raised" and rng.random() < 0.05 and len(stmts) >= 2:
                stmts.append(s)  # the jitted call must raise too
                break
            continue
        stmts.append(s)
        if made is not None:
            body.batch_vals.append(made)
    if not any(s.writes for s in stmts):
        return None
    q = p.replace(stmts=tuple(stmts), returns=_returns(body, stmts, rng, final=True))
    return q if _eager_calls(q) is not None else None


def _returns(body: _Body, stmts: list[Stmt], rng: random.Random, final: bool) -> tuple[str, ...]:
    made = [s.target for s in stmts if s.target]
    rets = made[-2:] if made else ["a * 1"]
    if final and rng.random() < 0.4:  # a state tensor itself as an output
        rets.append(rng.choice(body.mod.vecs() + ["m.w"] + (["m.kv"] if "kv" in body.mod.buffers else [])))
    if final and rng.random() < 0.2:
        rets.append("k")
    return tuple(dict.fromkeys(rets))


# Note [partial overlap within one op] at the dispatcher: an in-place op whose other operand shares its
# destination's memory at other indices, and eager ran it without an error, has no defined result
def _elements(t: torch.Tensor) -> frozenset:
    ranges = [range(n) for n in t.shape]
    off = t.storage_offset()
    return frozenset(off + sum(i * s for i, s in zip(ix, t.stride())) for ix in itertools.product(*ranges))


def _partial_overlap(d: torch.Tensor, s: torch.Tensor) -> bool:
    if s is d or d.untyped_storage().data_ptr() != s.untyped_storage().data_ptr():
        return False
    if s.storage_offset() == d.storage_offset() and s.shape == d.shape and s.stride() == d.stride():
        return False
    return not _elements(d).isdisjoint(_elements(s))


class _IllDefined(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.found = False

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        suspect = False
        schema = getattr(func, "_schema", None)
        if schema is not None:
            flat = list(args) + [kwargs.get(a.name) for a in schema.arguments[len(args):]]
            tensors = [t for x in flat for t in (x if isinstance(x, (list, tuple)) else (x,)) if isinstance(t, torch.Tensor)]
            for a, x in zip(schema.arguments, flat):
                if isinstance(x, torch.Tensor) and a.alias_info is not None and a.alias_info.is_write:
                    suspect |= any(_partial_overlap(x, t) for t in tensors)
        out = func(*args, **kwargs)
        self.found |= suspect
        return out


def _eager_calls(p: Program) -> list[str] | None:
    """"ok" or "raised" per call of ``p``, run eagerly without gradients (a call after a raise is
    "skipped"); None when a call's result is ill-defined (Note [module programs])."""
    ns = load(p)
    m = ns["make_module"]()
    fn = m if ns["ENTRY"] == "self" else ns["prog"]
    out = []
    for variant in p.calls:
        if out and out[-1] != "ok":
            out.append("skipped")
            continue
        mode = _IllDefined()
        with mode:
            rec = ns["_call"](fn, m, variant, backward=False)
        if mode.found:
            return None
        out.append("raised" if rec["err"] is not None else "ok")
    return out


def load(p: Program) -> dict:
    ns: dict = {"__name__": "fusion_alias_fuzz_program"}
    exec(compile(program_source(p, "eager"), f"<fuzz program {p.name}>", "exec"), ns)
    return ns


def has_hazard(p: Program) -> bool:
    """A module program with a write always has one: its parameters are views of one flat tensor."""
    return any(s.writes for s in p.stmts)
