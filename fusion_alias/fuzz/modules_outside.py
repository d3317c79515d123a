"""The ``modules`` generator's Python-level state outside the tensors (``gen_modules.py``): what ``Net``'s forward
branches on or calls, changed between calls by the statements of ``Variant.state``.

Note [Python state a module program branches on]
    Session 32 (outside_reads.py): Thunder 0.2.6 decides while tracing, and its prologue never checks again, what
    a program reads of Python objects outside its arguments. Some programs' ``Net`` holds, besides its tensors,

        extra   ``self.extra = None`` (a plain attribute, or ``register_buffer("extra", None)``); the forward
                reads ``x + m.extra if m.extra is not None else x * 1.0`` or writes ``m.extra.mul_(..)`` when it
                is not None; rebound to ``None``, ``m.u.detach().clone()``, ``m.b.detach()`` or the call's ``k``;
        cache   a plain dict: ``"t" in m.cache``, ``m.cache.get("t", k)``, ``len(m.cache)``; filled with
                ``m.cache["t"] = m.b.detach().clone()`` (or ``m.u``, ``k``), emptied by ``clear()``/``pop``;
        hist    a plain list: ``if m.hist``, ``len(m.hist) > 1``, ``m.hist[-1]``; ``append(..)``, ``clear()``;
        act     a function: ``self.act = torch.relu``, the forward calls ``m.act(x)``; rebound to ``torch.tanh``,
                ``torch.sigmoid``, ``torch.relu``;
        mode    a member of ``class Mode(enum.Enum)`` defined in the program: ``.. if m.mode is Mode.A else ..``;
        cfg     a plain object (``class Cfg``): ``hasattr(m.cfg, "gain")``, ``getattr(m.cfg, "gain", 1.0)``; its
                attribute set to a number or removed.

    The forward only reads these (and writes the tensor ``m.extra`` in place): storing a tensor into a container
    that outlives the call is refused by design (Note [stores into outliving containers]). The statements before
    the calls of variants 1 and 2 change them (after the tensor rebinds of Note [state rebound between calls]), so
    the compiled program must notice (compile again) on the later calls, including the last call of variant 0.

    Session 33: a submodule the forward calls, replaced and given hooks between calls, rides along (modules_hooks.py,
    Note [a submodule and its hooks, changed between calls]; a stream of its own), and so do process settings the
    forward branches on, changed between calls (modules_process.py, Note [a process setting the forward branches on,
    changed between calls]; a stream of its own). Session 34: so does code replaced between calls (modules_code.py,
    Note [code replaced between calls]; a stream of its own). Session 35: so do values of types Thunder's prologue
    does not check (modules_values.py, Note [values Thunder's prologue does not check, generated]; a stream of its
    own), and hook dicts replaced on the module (modules_hook_dicts.py, Note [hook dicts replaced between calls,
    generated]; a stream of its own). Session 45: so do buffers rebound to views made in the call
    (modules_view_rebinds.py, Note [a buffer rebound to a view made in the call, generated]; a stream of its own).

    Everything here is drawn from one generator seeded from ``rng``'s state without drawing from it (``draw``):
    with ``P_FORM`` 0 (no form drawn) every program is the one it was; a program holding a form may grow
    differently after it (a forward statement of the forms takes a body statement's place).
"""

from __future__ import annotations

import random

from fusion_alias.fuzz import (modules_code, modules_hook_dicts, modules_hooks, modules_process, modules_values,
                               modules_view_rebinds)
from fusion_alias.fuzz.own_stream_forms import OwnStreamForm, own_stream
from fusion_alias.fuzz.program import Stmt

FORMS = ("extra", "cache", "hist", "act", "mode", "cfg")
P_FORM = 0.08  # each form's probability in a program (tests set it to 0: the old streams)
P_STMT = 0.3  # a forward statement of the forms, where a program holds any
_PRELUDE = {
    "mode": ["import enum", "", "", "class Mode(enum.Enum):", "    A = 1", "    B = 2", "", ""],
    "cfg": ["class Cfg:", "    pass", "", ""],
}


class Outside:
    """The forms one program's ``Net`` holds, and the generator they draw from."""

    def __init__(self, s: random.Random):
        self.s = s
        self.forms = [f for f in FORMS if P_FORM > 0 and s.random() < P_FORM]
        self.extra_buffer = bool(self.forms) and s.random() < 0.3
        # the forms drawn from a stream of their own (``draw``: a submodule with hooks, modules_hooks.py; process
        # settings, modules_process.py; code replaced between calls, modules_code.py; values Thunder's prologue does
        # not check, modules_values.py; hook dicts replaced, modules_hook_dicts.py), in that order
        self.own: list[OwnStreamForm] = []
        self._next: OwnStreamForm | None = None  # the one whose forward statement comes next

    def source(self, module_src: str) -> str:
        """``Net``'s source (its ``__init__`` last) with the forms' definitions before it and their state last."""
        if not self.forms and not self.own:
            return module_src
        pre = [ln for f in self.forms for ln in _PRELUDE.get(f, [])] + [ln for f in self.own for ln in f.prelude()]
        init = {"extra": 'self.register_buffer("extra", None)' if self.extra_buffer else "self.extra = None",
                "cache": "self.cache = {}", "hist": "self.hist = []", "act": "self.act = torch.relu",
                "mode": "self.mode = Mode.A", "cfg": "self.cfg = Cfg()"}
        inits = [init[f] for f in self.forms] + [i for f in self.own for i in f.INIT]
        return "\n".join(pre) + ("\n" if pre else "") + module_src + "".join(f"        {i}\n" for i in inits)

    def wants(self) -> bool:
        self._next = None
        if self.forms and self.s.random() < P_STMT:
            return True
        self._next = next((f for f in self.own if f.wants()), None)  # (each from its own stream, until one wants)
        return self._next is not None

    def statement(self, body) -> tuple[Stmt, str | None]:
        """A forward statement reading one form (``body`` is the program's ``gen_modules._Body``)."""
        if self._next is not None:
            return self._next.statement(body)
        s = self.s
        form, x = s.choice(self.forms), s.choice(body.batch_vals)
        v = s.choice(body.mod.vecs() + ["k"])
        if form == "extra" and s.random() < 0.3:
            return Stmt(f"if m.extra is not None: m.extra.mul_({s.choice((0.5, 2.0, -1.0))})", writes="m"), None
        expr = {
            "extra": [f"{x} + m.extra if m.extra is not None else {x} * 1.0",
                      f"({x} * m.extra).sum(0) + {x} if m.extra is not None else {x} - {v}"],
            "cache": [f'{x} + m.cache["t"] if "t" in m.cache else {x} * 2.0', f'{x} * m.cache.get("t", {v})',
                      f"{x} * float(len(m.cache) + 1)", f'{x} - m.cache["t"] if m.cache.get("t") is not None else {x}'],
            "hist": [f"{x} + m.hist[-1] if m.hist else {x} * 0.5", f"{x} * float(len(m.hist) + 1)",
                     f"{x} + m.hist[0] - m.hist[1] if len(m.hist) > 1 else {x} + {v}"],
            "act": [f"m.act({x})", f"m.act({x} @ m.w.t() + {v})", f"{x} + m.act({v})"],
            "mode": [f"{x} * 2.0 if m.mode is Mode.A else {x} - {v}", f"{x} @ m.w.t() if m.mode == Mode.B else {x} + 1.0",
                     f"{x} * ({v} if m.mode is Mode.A else {v}.tanh())"],
            "cfg": [f'{x} * m.cfg.gain if hasattr(m.cfg, "gain") else {x} + {v}', f'{x} * getattr(m.cfg, "gain", 1.0)'],
        }[form]
        t = body.tmp()
        return Stmt(f"{t} = {s.choice(expr)}", target=t), t

    def rebinds(self) -> tuple[str, ...]:
        """Statements run before a later call that change the forms (Note [Python state a module program
        branches on]); none where the program holds none."""
        s = self.s
        out = []
        for form in self.forms:
            if s.random() >= 0.7:
                continue
            out.append(s.choice({
                "extra": ["m.extra = None", "m.extra = m.u.detach().clone()", "m.extra = m.b.detach()", "m.extra = k",
                          "m.extra = m.u.detach().clone()"],
                "cache": ['m.cache["t"] = m.b.detach().clone()', 'm.cache["t"] = m.u', 'm.cache["t"] = k',
                          "m.cache.clear()", 'm.cache.pop("t", None)', 'm.cache["t"] = m.b.detach().clone()'],
                "hist": ["m.hist.append(k.detach().clone())", "m.hist.append(m.b.detach())", "m.hist.append(m.u)",
                         "m.hist.clear()", "m.hist.append(m.u.detach().clone())"],
                "act": ["m.act = torch.tanh", "m.act = torch.sigmoid", "m.act = torch.relu"],
                "mode": ["m.mode = Mode.B", "m.mode = Mode.A", "m.mode = Mode.B"],
                "cfg": ["m.cfg.gain = 2.0", "m.cfg.gain = -0.5", 'vars(m.cfg).pop("gain", None)', "m.cfg.gain = 2.0"],
            }[form]))
        for f in self.own:
            out += f.rebinds()
        return tuple(out)


def draw(rng: random.Random) -> Outside:
    """The forms of one program, from a generator seeded from ``rng``'s state without drawing from it."""
    out = Outside(own_stream(rng, "outside"))
    out.own = [f for f in (modules_hooks.draw(rng), modules_process.draw(rng), modules_code.draw(rng),
                           modules_values.draw(rng), modules_hook_dicts.draw(rng), modules_view_rebinds.draw(rng))
               if f is not None]
    return out
