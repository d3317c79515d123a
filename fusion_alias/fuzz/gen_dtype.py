"""The dtype generator: bases of float16, bfloat16, float64, int32, int64, int8, uint8,
int16, bool, complex64 (and float32), with integer division and in-place type promotion.

Note [in-place type promotion]
    An in-place op computes in the promoted type of its operands and casts the
    result into the destination; eager raises when that cast is not allowed
    (``torch.can_cast(result_type, dst.dtype)`` is false):

        i = int32 tensor, f = float32 tensor, c = complex64 tensor, b = bool tensor
        i.add_(2)        ok     (int result)
        f.add_(i)        ok     (float result into float)
        i.div_(2)        raises (true division gives float)
        i.add_(f)        raises (float into int)
        i.mul_(1.5)      raises (a float scalar promotes an int tensor to float)
        b.add_(1)        raises (int into bool)
        f.add_(c)        raises (complex into float)
        c.abs_()         raises (abs of complex is real)
        i.copy_(f)       ok     (copy_ casts, truncating)
        i //= 2          ok     (floor division of ints is an int)

    Integer division rounds as asked: ``torch.div(i, 3, rounding_mode="trunc")``
    towards zero, ``"floor"`` and ``//`` downwards; true division of ints gives
    float. Divisors are never zero (``y.abs() + 1``): eager CPU raises on an
    integer division by zero, which no compiler reproduces. No ``%``/``remainder_``:
    Thunder 0.2.6 cannot trace ``%`` of a tensor (TypeError), which would make the
    whole program unsupported.
"""

from __future__ import annotations

import dataclasses
import random
import re

import torch

from fusion_alias.fuzz import dtype_rule_stmts, dtype_spellings, source
from fusion_alias.fuzz.gen_basic import _alias_expr, _Gen, _index_expr
from fusion_alias.fuzz.program import PARAM_NAMES, Stmt

DTYPES = ("float16", "bfloat16", "float64", "int32", "int64", "bool", "complex64", "float32", "int8", "uint8", "int16")
_DTYPE_WEIGHTS = (2, 2, 1, 3, 2, 2, 1, 2, 1, 1, 1)
_SHAPES = ((4, 6), (4, 4), (6,), (2, 3, 4), (1, 6))
_INT = ("int32", "int64", "uint8", "int8", "int16")
_FLOAT = ("float16", "bfloat16", "float32", "float64")


def dtype_inputs(rng: random.Random) -> dict:
    """1-3 bases of random dtypes; arguments are bases or aliases of them (a view has its base's dtype)."""
    nbases = rng.choice((1, 2, 2, 3))
    bases, dtypes, args = [], [], []
    for i in range(nbases):
        name, shape = f"x{i}", rng.choice(_SHAPES)
        bases.append((name, shape))
        dtype = rng.choices(DTYPES, _DTYPE_WEIGHTS)[0]
        if dtype != "float32":
            dtypes.append((name, dtype))
    nargs = rng.randint(nbases, min(4, nbases + 2))
    for i in range(nargs):
        name, shape = bases[i] if i < nbases else rng.choice(bases)
        expr = name if i < nbases and rng.random() < 0.7 else _alias_expr(rng, name, shape)
        args.append((PARAM_NAMES[i], expr))
    return {"bases": tuple(bases), "args": tuple(args), "dtypes": tuple(dtypes)}


class DtypeGen(_Gen):
    """Statements whose meaning depends on the dtypes: promotion, casts, integer division.

    Note [augmented assignments keep the stream]
        ``x += y``, ``x -= y``, ``x *= y`` and ``x //= d`` are eager's ``add_``, ``sub_``, ``mul_`` and
        ``floor_divide_`` (``div_(d, rounding_mode='floor')`` too): the same write, promotion rule and
        error. Thunder 0.2.6's proxy lacks ``//=`` (fusion_alias traces it: inplace_lookasides.py, Note
        [augmented assignments Thunder lacks]). Some in-place statements not assigned to a name are spelled
        so, drawn from ``augmented``, a stream of its own seeded from ``rng``'s state without drawing from
        it: every program of every seed keeps its statements, some written as augmented assignments.
    """

    def __init__(self, rng: random.Random, env: dict, names: list[str]):
        super().__init__(rng, env, names)
        self.augmented = random.Random(str(rng.getstate()[1][:16]) + ":augmented")
        # dtype_spellings.py, Note [conjugate views and identity tests in dtype programs keep the stream]
        self.dtype_spell = random.Random(str(rng.getstate()[1][:16]) + ":dtype-spell")
        # dtype_spellings.py, Note [conversion views in dtype programs keep the stream] (session 21)
        self.conversion = random.Random(str(rng.getstate()[1][:16]) + ":conversion")
        # dtype_rule_stmts.py, Note [dtype-rule statements keep the stream] (session 26)
        self.rule_stmts = dtype_rule_stmts.RuleStatements(str(rng.getstate()[1][:16]), env, names)
        # dtype_spellings.py, Note [special and huge numbers in dtype programs] (session 32; --special-values only)
        self.dtype_special = random.Random(str(rng.getstate()[1][:16]) + ":dtype-special")
        # dtype_spellings.py, Note [reductions given a dtype in dtype programs] (session 34)
        self.reduce_dtype = random.Random(str(rng.getstate()[1][:16]) + ":reduce-dtype")
        # dtype_spellings.py, Note [an in-place scan given its own dtype in dtype programs] (session 35)
        self.scan_dtype = random.Random(str(rng.getstate()[1][:16]) + ":scan-dtype")

    def extra_statement(self) -> Stmt | None:
        """A dtype-rule statement eager runs, added after a kept statement (or None): Note [dtype-rule
        statements keep the stream] (dtype_rule_stmts.py)."""
        return self.rule_stmts.extra()

    def extra_raising(self) -> list[Stmt]:
        """A last dtype-rule statement eager raises at (or none), for a program not already ending in one; else
        (dtype_spellings.py, Note [reductions given a dtype in dtype programs]) a reduction eager refuses for its
        ``dtype=``, or none."""
        found = self.rule_stmts.raising()
        if found or (drawn := dtype_spellings.refused_reduction(self.reduce_dtype, self.env, self.names)) is None:
            return found
        e, x = drawn
        if ".cumsum_(" in e:
            return [Stmt(e, reads=(x,), writes=x)]
        t = self.fresh()
        return [Stmt(f"{t} = {e}", target=t, reads=(x,))]

    def view(self) -> Stmt:
        s = super().view()
        code = dtype_spellings.conj_view(self.dtype_spell, s.code)
        return dataclasses.replace(s, code=dtype_spellings.conversion_view(self.conversion, code))

    def augmented_spelling(self, e: str, x: str) -> str:
        """``e``, an in-place statement into ``x``, as an augmented assignment where one means the same
        (Note [augmented assignments keep the stream]); else ``e``."""
        m = re.fullmatch(re.escape(x) + r"\.(add_|sub_|mul_|floor_divide_|div_)\((.*?)(, rounding_mode='floor')?\)", e)
        if m is None or (m.group(1) == "div_") != (m.group(3) is not None) or self.augmented.random() >= 0.4:
            return e
        op = {"add_": "+=", "sub_": "-=", "mul_": "*=", "floor_divide_": "//=", "div_": "//="}[m.group(1)]
        return f"{x} {op} {m.group(2)}"

    def dtype(self, v: str) -> str:
        return str(self.env[v].dtype).removeprefix("torch.")

    def _special(self, x: str, c: str, divisor: bool = False) -> str:
        """``c``, or with ``--special-values`` (a third of the time) a special or out-of-range number for ``x``'s
        dtype, drawn after ``c`` from ``dtype_special`` (Note [special and huge numbers in dtype programs])."""
        if source.SPECIAL_VALUES and self.dtype_special.random() < 1 / 3:
            return dtype_spellings.special_number(self.dtype_special, self.env[x].dtype, divisor)
        return c

    def _constant(self, x: str) -> str:
        c = self.rng.choice(("2", "3", "-2", "1.5", "0.5", "True", "(1+2j)") if self.dtype(x) != "bool"
                            else ("True", "False", "1", "2"))
        return self._special(x, c)

    def _divisor(self, x: str) -> tuple[str, tuple[str, ...]]:
        """A divisor for ``x``: a nonzero constant, or ``(y.abs() + 1)`` of a variable (Note [in-place type promotion])."""
        y = self.operand(x, inplace=False)
        if self._is_var(y) and self.dtype(y) != "bool":
            return f"({y}.abs() + 1)", (y,)
        return self._special(x, self.rng.choice(("2", "3", "-2", "0.5", "4")), divisor=True), ()

    def inplace(self) -> Stmt:
        rng, x = self.rng, self.pick(writable=True)
        kind = rng.choices(("promote", "divide", "copy", "setitem", "unary"), (5, 3, 2, 2, 2))[0]
        reads: tuple[str, ...] = (x,)
        if kind == "promote":
            y = self.operand(x, inplace=True) if rng.random() < 0.7 else self._constant(x)
            op = rng.choice(("add_", "sub_", "mul_"))
            e = f"{x}.{op}({y})"
            reads = (x, y) if self._is_var(y) else (x,)
        elif kind == "divide":
            d, dr = self._divisor(x)
            e = rng.choice((f"{x}.div_({d})", f"{x}.div_({d}, rounding_mode='trunc')",
                            f"{x}.div_({d}, rounding_mode='floor')", f"{x}.floor_divide_({d})"))
            reads = (x, *dr)
        elif kind == "copy":
            y = rng.choice(self.names)
            if self.shape(y) != self.shape(x):
                y = self.operand(x, inplace=True)
                if not self._is_var(y):
                    y = x
            e = f"{x}.copy_({y})"
            reads = (y,)
        elif kind == "setitem":
            idx = _index_expr(rng, self.shape(x)) or "[...]"
            y = self._constant(x) if rng.random() < 0.5 else rng.choice(self.names)
            return Stmt(f"{x}{idx} = {y}", reads=(y,) if self._is_var(y) else (), writes=x)
        else:
            dt = self.dtype(x)
            ops = ["zero_()", "neg_()", "abs_()"]
            if dt in _INT or dt == "bool":
                ops += ["bitwise_not_()", "logical_not_()"]
            if dt in _FLOAT:
                ops += ["tanh_()", "clamp_(-0.5, 0.5)"]
            if dt in _INT:
                ops += ["clamp_(-3, 3)"]
            e = dtype_spellings.scan_with_dtype(self.scan_dtype, f"{x}.{rng.choice(ops)}", x, dt, len(self.shape(x)))
        if rng.random() < 0.3:
            t = self.fresh()
            return Stmt(f"{t} = {e}", target=t, reads=reads, writes=x, inplace_result=True)
        return Stmt(self.augmented_spelling(e, x), reads=reads, writes=x)

    def outofplace(self) -> Stmt:
        rng, x = self.rng, self.pick()
        kind = rng.choices(("cast", "binary", "divide", "unary", "reduce"), (3, 4, 4, 2, 1))[0]
        reads: tuple[str, ...] = (x,)
        if kind == "cast":
            # .to() of the tensor's own dtype returns the tensor itself: an alias, not a copy
            to = rng.choice((self.dtype(x),) + DTYPES)
            e = rng.choice((f"{x}.to(torch.{to})", f"{x}.float()", f"{x}.int()", f"{x}.double()", f"{x}.bool()",
                            f"{x}.to(torch.{to})"))
        elif kind == "binary":
            y = self.operand(x, inplace=False) if rng.random() < 0.7 else self._constant(x)
            e = rng.choice((f"{x} + {y}", f"{x} * {y}", f"{x} - {y}", f"{x} > {y}", f"{x} & {y}", f"{x} | {y}",
                            f"torch.where({x} > 0, {x}, {y})", f"torch.maximum({x}, {y})"))
            if self._is_var(y):
                reads = (x, y)
        elif kind == "divide":
            d, dr = self._divisor(x)
            e = rng.choice((f"torch.div({x}, {d}, rounding_mode='trunc')", f"torch.div({x}, {d}, rounding_mode='floor')",
                            f"{x} // {d}", f"{x} / {d}", f"torch.div({x}, {d})"))
            reads = (x, *dr)
        elif kind == "unary":
            e = rng.choice((f"{x}.abs()", f"-{x}", f"torch.tanh({x})", f"~{x}", f"{x}.sign()", f"{x}.clone()"))
        else:
            e = rng.choice((f"{x}.sum()", f"{x}.sum(0)", f"{x}.amax(0)", f"{x}.float().mean()", f"{x}.prod()"))
        if (r := dtype_spellings.reduction_dtype(self.reduce_dtype, x, e)) != e:
            e, reads = r, (x,)
        e = dtype_spellings.identity_factor(self.dtype_spell, self.env, self.names, self.same_as, e)
        t = self.fresh()
        return Stmt(f"{t} = {e}", target=t, reads=reads)

    def bad_inplace(self) -> list[Stmt]:
        """An in-place op whose result type eager cannot cast into the destination (Note [in-place type promotion])."""
        rng, x = self.rng, self.pick(writable=True)
        dt = self.dtype(x)
        others = [v for v in self.names if v != x and self._broadcasts_into(v, x)]
        wider = [v for v in others if _rank(self.dtype(v)) > _rank(dt)]
        if dt == "bool":
            ops = ["add_(1)", "mul_(2)", "neg_()", "div_(2)"]
        elif dt in _INT:
            ops = ["div_(2)", "mul_(1.5)", "add_(0.5)", "tanh_()", "sqrt_()"]
        elif dt in _FLOAT:
            ops = ["mul_(1j)", "add_((1+2j))"]
        else:  # complex
            ops = ["abs_()", "clamp_(0, 1)"]
        if wider and rng.random() < 0.6:
            y = rng.choice(wider)
            bad = [Stmt(f"{x}.{rng.choice(('add_', 'mul_', 'sub_'))}({y})", reads=(x, y), writes=x)]
        else:
            bad = [Stmt(f"{x}.{rng.choice(ops)}", reads=(x,), writes=x)]
        return self._bad_number(x) or bad

    def _bad_number(self, x: str) -> list[Stmt]:
        """With ``--special-values`` (half the time): a write of a number ``x``'s dtype cannot hold (``x.fill_(300)``
        of an int8 ``x``, ``x[0] = 2**31`` of an int32 one, ``x.add_(2**64)``), drawn from ``dtype_special`` after
        every other draw: eager raises at most (Note [special and huge numbers in dtype programs]); where it does
        not, the generator drops it as it drops every bad statement eager runs."""
        s = self.dtype_special
        if not source.SPECIAL_VALUES or self.dtype(x) == "bool" or s.random() >= 0.5:
            return []
        dt = self.env[x].dtype
        if dt.is_floating_point or dt.is_complex:
            big = s.choice(("1e300", "-1e300", "2**64", "1e39" if dt != torch.float64 else "2**1100",
                            "1e5" if dt == torch.float16 else "1e300"))
        else:
            info = torch.iinfo(dt)
            big = s.choice((str(info.max + 1), str(info.min - 1), "2**63", "2**64", "1e300", "float('inf')"))
        idx = _index_expr(s, self.shape(x)) or "[...]"
        form = s.choice((f"{x}.fill_({big})", f"{x}{idx} = {big}", f"{x}.clamp_(max={big})", f"{x}.add_({big})",
                         f"{x}.masked_fill_({x} != 0, {big})", f"{x}.mul_({big})"))
        return [Stmt(form, reads=(x,), writes=x)]

    def _broadcasts_into(self, v: str, x: str) -> bool:
        try:
            return tuple(torch.broadcast_shapes(self.shape(v), self.shape(x))) == self.shape(x)
        except RuntimeError:
            return False


def _rank(dtype: str) -> int:
    """Order of the type categories: bool < integer < floating < complex."""
    if dtype == "bool":
        return 0
    if dtype in _INT:
        return 1
    if dtype in _FLOAT:
        return 2
    return 3
