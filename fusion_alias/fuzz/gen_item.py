"""The item generator: ``x.item()`` of tensors the program writes, as numbers and in Python decisions.

Note [item() values in the fuzzer]
    Session 26. ``x.item()`` inside the compiled function is a number only the running trace knows
    (item_branches.py, Note [a branch on a value the trace does not know]): as an operand it must run and
    give eager's values; in a Python decision (an ``if``, ``max``, ``int()``) Thunder 0.2.6 fixed the branch
    taken at the first call, and fusion_alias refuses it (``DataDependentBranchError``). No generator made
    either. This one draws the basic generator's inputs (float32 bases that share memory) and statements,
    and mixes in statements that read a number through ``item()`` of a tensor just written in place, or of
    a view of the memory it wrote (an alias of it as often as not), inline or into a named number used later
    (after more writes, so the number must keep the value it had when it was read)::

        kind       statements                                            fusion_alias must
        operand    x.mul_(b[0, 1].item()); t3 = a + b.sum().item()       run, as eager
                   n0 = a.flatten()[5].item(); ...; b.add_(n0 * 0.5)
                   x[1] = n0; x.clamp_(max=n0); torch.full_like(x, n0)
        decision   if a.sum().item() > 0: b.mul_(2.0)                    refuse (DataDependentBranchError)
                   t4 = b * max(n0, 0.5); min, int, float, round, abs,
                   bool, sorted([...]); 2.0 if n0 > 0 else -1.0

    A program is an ``operand`` program (its statements use numbers only as operands; no refusal is
    documented for it, so any refusal is a failure) or a ``decision`` one (operands too, and at least one
    decision; the documented refusal is the DataDependentBranchError). Each decision statement carries
    ``Stmt.must_refuse``: a decision program whose jitted calls all return is a missed rejection even where
    every value matched eager's (oracle.py, Note [statements fusion_alias must refuse]), and a shrunk one
    keeps a decision. ``finish`` sets the program's ``refusals`` and its ``item_mode`` tag from the
    statements it kept. Drawn only when asked for (``--generator item``): the default streams stay as they
    were.
"""

from __future__ import annotations

import random

from fusion_alias.fuzz.gen_basic import _gen_inputs, _Gen
from fusion_alias.fuzz.hazard import _overlaps, _same_layout
from fusion_alias.fuzz.program import Program, Stmt

MODES = ("operand", "decision")
# a piece of the DataDependentBranchError's message (item_branches.py): the refusal a decision program may get
DECISION_REFUSAL = "of a number computed from a tensor's value"
MUST_REFUSE = "a Python decision on a number from x.item() (item_branches.py)"
DECISIONS = ("if", "ternary", "max", "min", "int", "float", "round", "abs", "bool", "sorted")


def item_inputs(rng: random.Random) -> dict:
    """The basic generator's inputs, and the program's mode (``MODES``)."""
    bases, args = _gen_inputs(rng)
    mode = rng.choices(MODES, (11, 9))[0]
    return {"bases": bases, "args": args, "tags": (("item_mode", mode),)}


def item_mode(p: Program) -> str | None:
    """The mode of a program of this generator (None for other generators)."""
    return dict(p.tags).get("item_mode") if p.kind == "item" else None


def finish(p: Program) -> Program:
    """``p`` with its mode and documented refusals taken from the statements it kept (module Note)."""
    decides = any(s.must_refuse for s in p.stmts)
    mode = "decision" if decides else "operand"
    tags = tuple((k, v) for k, v in p.tags if k != "item_mode") + (("item_mode", mode),)
    return p.replace(tags=tags, refusals=(DECISION_REFUSAL,) if decides else ())


class ItemGen(_Gen):
    """The basic generator's statements, and (about 45%) statements that read numbers through ``item()``."""

    def __init__(self, rng, env, names):
        super().__init__(rng, env, names)
        self.mode = "operand"  # ``configure``
        self.written: list[str] = []  # the variables written in place, in order
        self.numbers: list[str] = []  # named numbers (n0 = v.sum().item()), maybe not kept by the generator
        self.decided = False

    def configure(self, p: Program) -> None:
        self.mode = item_mode(p) or "operand"

    def statement(self) -> Stmt:
        rng = self.rng
        if rng.random() < 0.45:
            decide = self.mode == "decision" and (not self.decided or rng.random() < 0.35)
            s = self._decision() if decide else self._operand()
            self.decided |= decide
        else:
            s = super().statement()
        if s.writes is not None:
            self.written.append(s.writes)
        return s

    # --- numbers ---

    def _source(self) -> tuple[str, str]:
        """(an expression of one number of a tensor's value through ``item()``, the tensor read): of a
        tensor written lately, or of one sharing its memory, most of the time."""
        rng = self.rng
        v = self.pick()
        if self.written and rng.random() < 0.75:
            w = rng.choice(self.written[-2:])
            if w in self.env:
                v = rng.choice([u for u in self.names if _overlaps(self.env[u], self.env[w])] or [w])
        return f"{_number_of(rng, v, tuple(self.env[v].shape))}.item()", v

    def _number(self) -> tuple[str, str | None]:
        """(a number: an inline ``item()`` or a named one defined earlier, the tensor read or None)."""
        named = [n for n in self.numbers if n in self.env]
        if named and self.rng.random() < 0.4:
            return self.rng.choice(named), None
        return self._source()

    def _reads(self, x: str | None, *read: str | None) -> tuple[str, ...]:
        """The tensors a statement writing ``x`` reads: an ``item()`` source that overlaps ``x`` at other
        indices is left out (its number is read before the write: the statement is defined, and
        ``_ill_defined`` would drop it)."""
        out = []
        for v in read:
            if v is None or v in out:
                continue
            if x is not None and v != x and _overlaps(self.env[v], self.env[x]) and not _same_layout(
                    self.env[x], self.env[v]):
                continue
            out.append(v)
        return tuple(out)

    # --- statements ---

    def _operand(self) -> Stmt:
        rng = self.rng
        kind = rng.choices(("name", "inplace", "setitem", "outofplace"), (2, 5, 1, 3))[0]
        num, v = self._number()
        other, w = self._number()
        if kind == "name":
            n = f"n{len(self.numbers)}"
            self.numbers.append(n)
            return Stmt(f"{n} = {num}" if v is not None else f"{n} = {num} * 2 - 1", reads=(v,) if v else ())
        if kind in ("inplace", "setitem"):
            x = self.pick(writable=True)
            if kind == "setitem" and self.env[x].dim():
                idx = ", ".join(str(rng.randrange(n)) for n in self.env[x].shape[:1])
                return Stmt(f"{x}[{idx}] = {num}", reads=self._reads(x, v), writes=x)
            op = rng.choice((f"mul_({num})", f"add_({num})", f"sub_({num} * 0.5)", f"fill_({num})",
                             f"clamp_(max={num})", f"div_({num} * {num} + 1.0)",
                             f"add_({num} - {other})", f"lerp_(torch.zeros_like({x}), {num})"))
            if rng.random() < 0.3:
                t = self.fresh()
                self.same_as[t] = x
                return Stmt(f"{t} = {x}.{op}", target=t, reads=self._reads(x, x, v, w), writes=x, inplace_result=True)
            return Stmt(f"{x}.{op}", reads=self._reads(x, x, v, w), writes=x)
        x = self.pick()
        t = self.fresh()
        e = rng.choice((f"{x} + {num}", f"{x} * {num}", f"torch.full_like({x}, {num})", f"({x} - {num}) * 2",
                        f"torch.where({x} > 0, {x}, {x} * {num})", f"{x}.sum() * {num}"))
        return Stmt(f"{t} = {e}", target=t, reads=self._reads(None, x, v))

    def _decision(self) -> Stmt:
        rng = self.rng
        num, v = self._number()
        kind = rng.choice(DECISIONS)
        c = rng.choice(("0", "0.5", "-0.25"))
        if kind == "if" or (kind == "ternary" and rng.random() < 0.4):
            x = self.pick(writable=True)
            op = rng.choice(("mul_(2.0)", "add_(1.0)", "neg_()", "zero_()"))
            if kind == "if":
                return Stmt(f"if {num} > {c}: {x}.{op}", reads=self._reads(x, x, v), writes=x, must_refuse=MUST_REFUSE)
            return Stmt(f"{x}.add_(1.0 if {num} > {c} else -1.0)", reads=self._reads(x, x, v), writes=x,
                        must_refuse=MUST_REFUSE)
        y = self.pick()
        t = self.fresh()
        other, _ = self._number()
        e = {
            "ternary": f"{y} * 2.0 if {num} > {c} else {y} * -1.0",
            "max": f"{y} * max({num}, {c})",
            "min": f"{y} * min({num}, {c})",
            "int": f"{y} * int({num} * 4)",
            "float": f"{y} + float({num})",
            "round": rng.choice((f"{y} * round({num}, 1)", f"{y} + round({num} * 3)")),
            "abs": f"{y} * abs({num})",
            "bool": f"{y} * bool({num} > {c})",
            "sorted": f"{y} * sorted([{num}, {other}, {c}])[1]",
        }[kind]
        return Stmt(f"{t} = {e}", target=t, reads=self._reads(None, y, v), must_refuse=MUST_REFUSE)


def _number_of(rng: random.Random, v: str, shape: tuple[int, ...]) -> str:
    """A one-element expression of ``v``: an element (through an index or ``flatten()``), a reduction."""
    numel = 1
    for n in shape:
        numel *= n
    if not numel:
        return f"{v}.sum()"
    options = [f"{v}.sum()", f"{v}.mean()", f"{v}.max()", f"{v}.abs().sum()"]
    if shape:
        element = f"{v}[{', '.join(str(rng.randrange(n)) for n in shape)}]"
        options += [element, element, f"{v}.flatten()[{rng.randrange(numel)}]"]
    else:
        options += [v, v]
    return rng.choice(options)
