"""The ties generator: gradient-sensitive ops on tensors full of ties and zeros, written through views.

Note [ties and zeros in the fuzzer]
    Session 27. The other generators draw their float bases from ``torch.rand``: no two elements are
    equal and none is zero, so a wrong gradient at a tie or at a zero never shows. Session 27 found
    several: ``x.max(dim).values`` shared its gradient among tied maxima (eager gives it all to the
    returned index), ``w.pow(0)`` and ``prod`` with a zero in the slice gave NaN gradients,
    ``F.normalize`` of an all-zero row NaN, ``torch.minimum``/``lerp``/``round``/``trunc``/``isfinite``/
    ``remainder`` had no gradient, ``torch.min`` was missing, ``clamp`` at its bound had the wrong gradient.
    This generator draws the basic generator's inputs (float32 bases, a quarter of the programs float64,
    arguments that share memory) with *tie-heavy values*: each base is rounded to a multiple of 1/c
    (c in 1, 2, 4: values in [-1, 1], many equal, many exact zeros), sometimes with a whole zero row and a
    row copied from another, or all zeros. The rounding is done in ``make_inputs`` on the base's
    ``.data`` (a base made with ``--grad`` stays ``leaf * 1``: the gradient still reaches the leaf), spelled
    into every argument of that base, idempotent, so an argument dropped by the shrinker changes nothing::

        args = [(x0.data.mul_(2).round_().div_(2).add_(0.0), x0.data[1].zero_(), x0)[-1][:, ::2], ...]

    (``add_(0.0)`` turns the ``-0.0`` rounding makes into ``0.0``.) The body mixes the basic generator's
    views and in-place ops with ops whose gradient (or value) is decided at ties and zeros, in place into
    arguments and views of them and out of place, the reductions often of a tensor sharing the memory
    written just before (``t0 = a[0]; t0.relu_(); t1 = a.max(1).values``)::

        reductions   x.max(d).values/.indices, x.min(d)[0], torch.max(x, d, keepdim=True)[0], amax/amin,
                     x.max().reshape(1), x.prod(d), logsumexp, sort(d).values, topk, cummax/cummin, softmax
        elementwise  relu(_), abs(_), clamp(_) at tie bounds (numbers and tensors), minimum/maximum,
                     where(x > y, x, y), pow 0/1/2, abs().pow(0.5), lerp(_), round/trunc/floor(_),
                     remainder/%, isfinite, F.normalize(x, dim=d)

    Every statement is kept only where eager runs it (generator.py, Note [a body valid for every call]).
    No refusal is documented for the class (``Program.refusals`` is empty: with ``--grad`` those of calls
    that compute gradients still count, gen_edges.py), so a needless refusal of one of these ops fails.
    Drawn only when asked for (``--generator ties``): the default streams stay as they were.
"""

from __future__ import annotations

import random
import re

import torch

from fusion_alias.fuzz import out_spellings
from fusion_alias.fuzz.gen_basic import _gen_inputs, _Gen
from fusion_alias.fuzz.hazard import _overlaps
from fusion_alias.fuzz.program import Program, Stmt

TIE_VALUES = ("0.0", "0.5", "-0.5", "1.0", "-1.0")
NORMALIZE = "torch.nn.functional.normalize"
# the op families the generator draws (the test counts each in drawn programs)
FAMILIES = {
    "max_dim": r"\.max\(-?\d(, keepdim=True)?\)|torch\.max\(\w+, -?\d",
    "min_dim": r"\.min\(-?\d(, keepdim=True)?\)|torch\.min\(\w+, -?\d",
    "amax_amin": r"\.am(ax|in)\(",
    "full_max_min": r"\.(max|min)\(\)\.reshape\(1\)",
    "indices": r"\.indices",
    "relu": r"relu_?\(",
    "abs": r"abs_?\(",
    "clamp": r"clamp_?\(",
    "minimum_maximum": r"torch\.(minimum|maximum)\(",
    "where": r"torch\.where\(",
    "pow": r"pow_?\(|\*\* 2",
    "prod": r"\.prod\(",
    "normalize": r"normalize\(",
    "lerp": r"lerp_?\(",
    "round_trunc_floor": r"(round|trunc|floor)_?\(",
    "remainder": r"remainder_?\(| % ",
    "isfinite": r"isfinite\(",
    "sort_topk": r"\.(sort|topk)\(",
    "cummax": r"\.cum(max|min)\(",
    "logsumexp_softmax": r"logsumexp\(|softmax\(",
}


def _tie_prep(rng: random.Random, name: str, shape: tuple[int, ...]) -> str:
    """The expression that gives base ``name`` its tie-heavy values (on ``.data``), then is ``name`` itself."""
    c = rng.choice((1, 2, 2, 4))
    steps = [f"{name}.data.round_().add_(0.0)" if c == 1 else f"{name}.data.mul_({c}).round_().div_({c}).add_(0.0)"]
    if shape and rng.random() < 0.1:
        steps = [f"{name}.data.zero_()"]
    elif shape:
        if rng.random() < 0.5:
            steps.append(f"{name}.data[{rng.randrange(shape[0])}].zero_()")
        if shape[0] > 1 and rng.random() < 0.35:
            r1, r2 = rng.sample(range(shape[0]), 2)
            steps.append(f"{name}.data[{r1}].copy_({name}.data[{r2}])")
    return f"({', '.join(steps)}, {name})[-1]"


def ties_inputs(rng: random.Random) -> dict:
    """The basic generator's bases and arguments, tie-valued (module Note), float32 or (a quarter) float64."""
    bases, args = _gen_inputs(rng)
    prep = {name: _tie_prep(rng, name, shape) for name, shape in bases}
    tied = []
    for param, expr in args:
        base = next(n for n, _ in bases if expr == n or (expr.startswith(n) and not expr[len(n)].isalnum()))
        tied.append((param, prep[base] + expr[len(base):]))
    dtypes = tuple((n, "float64") for n, _ in bases) if rng.random() < 0.25 else ()
    return {"bases": bases, "args": tuple(tied), "dtypes": dtypes}


def finish(p: Program) -> Program:
    """No refusal is documented for the class (module Note). With ``--grad``, a write that overwrites a tensor
    eager saved for the backward (``t0 = a.prod(0); a.relu_()``) makes eager's backward raise and the program
    not comparable: such writes are dropped, the last first, until eager's backward runs (a few tries)."""
    p = p.replace(refusals=())
    if not out_spellings.GRAD.get():
        return p
    for _ in range(4):
        if _eager_backward_runs(p):
            return p
        for i in reversed(range(len(p.stmts))):
            s = p.stmts[i]
            later = " ".join(t.code for t in p.stmts[i + 1:])
            if s.writes is None or (s.target is not None and re.search(rf"\b{s.target}\b", later)):
                continue
            p = p.replace(stmts=p.stmts[:i] + p.stmts[i + 1:], returns=tuple(r for r in p.returns if r != s.target)
                          or p.returns[:0] + (p.params[0],))
            break
        else:
            return p
    return p


def _eager_backward_runs(p: Program) -> bool:
    from fusion_alias.fuzz.oracle import run_program  # (the oracle imports the generators' package)

    status, detail = run_program(p.replace(grad=True), "reads-first", system="eager")
    return not (status == "both-raised" and "eager's backward raised" in detail)


class TiesGen(_Gen):
    """The basic generator's views and statements (a third), and ops decided at ties and zeros."""

    def __init__(self, rng, env, names):
        super().__init__(rng, env, names)
        self.written: list[str] = []

    def statement(self) -> Stmt:
        rng = self.rng
        kind = rng.choices(("basic", "view", "inplace", "outofplace"), (1, 3, 3, 5))[0]
        if kind == "basic":
            s = super().statement()
            if ".detach()" in s.code or "no_grad" in s.code:
                # (a returned ``t.detach()`` of an intermediate comes back requiring grad in a program that
                # writes nothing: a documented Thunder difference, docs/limits.md; seed 50003 #25)
                s = self.tie_outofplace()
        elif kind == "view":  # (a plain view: not made under no_grad, not of x.detach(), refused with --grad)
            s = self.view()
            s = Stmt(s.code.replace("with torch.no_grad(): ", "").replace(".detach()", ""), target=s.target,
                     view_of=s.view_of)
        elif kind == "inplace":
            s = self.tie_inplace()
        else:
            s = self.tie_outofplace()
        if s.writes is not None:
            self.written.append(s.writes)
        return s

    # --- operands ---

    def _floats(self) -> list[str]:
        return [v for v in self.names if self.env[v].is_floating_point()]

    def _read(self) -> str:
        """A float tensor to read, most of the time one sharing the memory written lately (module Note)."""
        rng = self.rng
        floats = self._floats() or self.names
        if self.written and rng.random() < 0.65:
            w = rng.choice(self.written[-2:])
            if w in self.env:
                near = [v for v in floats if _overlaps(self.env[v], self.env[w])]
                if near:
                    return rng.choice(near)
        return rng.choice(floats)

    def _other(self, x: str, inplace: bool, number: bool = True) -> str:
        """A second operand for ``x``: a float tensor that broadcasts with it (an alias of it as often as
        not), or a tie value."""
        rng = self.rng
        if number and rng.random() < 0.25:
            return rng.choice(TIE_VALUES)
        xs = self.shape(x)
        ok, aliased = [], []
        for v in self._floats():
            try:
                bs = tuple(torch.broadcast_shapes(xs, self.shape(v)))
            except RuntimeError:
                continue
            if inplace and bs != xs:
                continue
            ok.append(v)
            if v != x and _overlaps(self.env[v], self.env[x]):
                aliased.append(v)
        if aliased and rng.random() < 0.5:
            return rng.choice(aliased)
        return rng.choice(ok) if ok else (rng.choice(TIE_VALUES) if number else x)

    def _dim(self, x: str) -> int:
        nd = len(self.shape(x))
        return self.rng.randrange(-nd, nd) if nd else 0

    # --- statements ---

    def tie_inplace(self) -> Stmt:
        rng = self.rng
        x = self.pick(writable=True)
        c, c2 = sorted(rng.sample(TIE_VALUES, 2), key=float)
        kind = rng.choice(("unary", "clamp", "clamp_tensor", "binary", "pow", "lerp", "remainder", "copy",
                           "setitem"))
        reads: tuple[str, ...] = (x,)
        if kind == "unary":
            e = f"{x}.{rng.choice(('relu_()', 'abs_()', 'round_()', 'trunc_()', 'floor_()', 'neg_()'))}"
        elif kind == "clamp":
            e = rng.choice((f"{x}.clamp_(min={c})", f"{x}.clamp_(max={c})", f"{x}.clamp_({c}, {c2})",
                            f"{x}.clamp_min_({c})", f"{x}.clamp_max_({c})"))
        elif kind == "pow":
            e = rng.choice((f"{x}.pow_(0)", f"{x}.pow_(1)", f"{x}.pow_(2)", f"{x}.abs_().pow_(0.5)",
                            f"{x}.mul_({x})"))
        elif kind == "remainder":
            e = rng.choice((f"{x}.remainder_({rng.choice(('0.5', '1.0', '1.5'))})", f"{x}.fmod_(0.5)"))
        else:
            y = self._other(x, inplace=True, number=kind in ("binary", "lerp"))
            reads = (x, y) if y in self.env else (x,)
            if kind == "clamp_tensor":
                e = rng.choice((f"{x}.clamp_(min={y})", f"{x}.clamp_(max={y})", f"{x}.clamp_({y}, {y} + 0.5)"))
            elif kind == "binary":
                e = (f"{x}.copy_(torch.{rng.choice(('minimum', 'maximum'))}({x}, {y}))" if y in self.env
                     else f"{x}.mul_({y})")
            elif kind == "lerp":
                w = rng.choice(("0.5", "0.0", "1.0", "0.25")) if rng.random() < 0.7 else f"{x}.abs()"
                e = f"{x}.lerp_({y if y in self.env else f'torch.full_like({x}, {y})'}, {w})"
            elif kind == "copy":
                d = self._dim(y)
                e = rng.choice((f"{x}.copy_(torch.where({x} > {y}, {x}, {y}))",
                                f"{x}.copy_({NORMALIZE}({x}, dim={self._dim(x)}))",
                                f"{x}.copy_({x}.prod({self._dim(x)}, keepdim=True))",
                                f"{x}.copy_({y}.amax({d}, keepdim=True))" if self.shape(y) else f"{x}.copy_({y})"))
            else:  # setitem of a reduction of y (tie-sensitive) into a row of x
                if not self.shape(x) or len(self.shape(y)) < 1:
                    return Stmt(f"{x}.relu_()", reads=(x,), writes=x)
                d = self._dim(y)
                r = rng.randrange(self.shape(x)[0])
                e = f"{x}[{r}] = {y}.{rng.choice(('max', 'min'))}({d}).values"
                return Stmt(e, reads=(y,), writes=x)
        if rng.random() < 0.25:
            t = self.fresh()
            self.same_as[t] = x
            return Stmt(f"{t} = {e}", target=t, reads=reads, writes=x, inplace_result=True)
        return Stmt(e, reads=reads, writes=x)

    def tie_outofplace(self) -> Stmt:
        rng = self.rng
        x = self._read()
        nd = len(self.shape(x))
        d = self._dim(x)
        n = self.shape(x)[d] if nd else 1
        k = rng.randint(1, max(1, min(n, 3)))
        reductions = (
            f"{x}.max({d}).values", f"{x}.max({d}).indices", f"{x}.min({d})[0]", f"{x}.min({d}).indices",
            f"torch.max({x}, {d}, keepdim=True)[0]", f"torch.min({x}, {d}, keepdim=True).values",
            f"{x}.amax({d})", f"{x}.amin({d}, keepdim=True)", f"{x}.max().reshape(1)", f"{x}.min().reshape(1)",
            f"{x}.prod({d})", f"{x}.prod({d}, keepdim=True)", f"{x}.logsumexp({d})", f"torch.softmax({x}, {d})",
            f"{x}.sort({d}).values", f"{x}.sort({d}, descending=True)[0]", f"{x}.topk({k}, {d}).values",
            f"torch.topk({x}, {k}, dim={d}, largest=False).values", f"{x}.cummax({d}).values",
            f"{x}.cummin({d})[0]", f"{NORMALIZE}({x}, dim={d})",
            # (the classes of session 27's bugs, twice as often)
            f"{x}.max({d}).values", f"{x}.min({d})[0]", f"{x}.prod({d})", f"{NORMALIZE}({x}, dim={d})",
            f"torch.max({x}, {d}, keepdim=True)[0]", f"{x}.max({d}, keepdim=True).values * 2",
        )
        unary = (
            f"torch.relu({x})", f"{x}.abs()", f"{x}.clamp(min={rng.choice(TIE_VALUES)})",
            f"{x}.clamp({rng.choice(('-0.5', '0.0'))}, {rng.choice(('0.0', '0.5'))})", f"{x}.pow(0)",
            f"{x}.pow(1)", f"{x} ** 2", f"{x}.abs().pow(0.5)", f"torch.pow({x}, 0)", f"{x}.round()",
            f"torch.trunc({x})", f"{x}.floor()", f"{x} % {rng.choice(('0.5', '1.0'))}",
            f"torch.remainder({x}, 1.5)", f"{x} * torch.isfinite({x})",
            f"torch.where(torch.isfinite({x}), {x}, 0.0)",
        )
        roll = rng.random()
        if roll < 0.5 and nd:
            e = rng.choice(reductions)
            reads: tuple[str, ...] = (x,)
        elif roll < 0.7:
            e = rng.choice(unary)
            reads = (x,)
        else:
            y = self._other(x, inplace=False, number=False)
            e = rng.choice((
                f"torch.minimum({x}, {y})", f"torch.maximum({x}, {y})", f"torch.where({x} > {y}, {x}, {y})",
                f"torch.where({x} >= {y}, {y}, {x})", f"{x}.clamp(min={y})", f"torch.clamp({x}, max={y})",
                f"torch.lerp({x}, {y}, 0.5)", f"{x}.lerp({y}, {y}.abs())", f"{x}.remainder({y}.abs() + 0.5)",
                f"{x} * {y}", f"({x} - {y}).abs()",
            ))
            reads = tuple(dict.fromkeys((x, y)))
        t = self.fresh()
        return Stmt(f"{t} = {e}", target=t, reads=reads)
