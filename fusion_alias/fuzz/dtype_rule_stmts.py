"""Statements of the dtype generator (``gen_dtype.DtypeGen``) for eager's dtype rules that session 25 taught the
core (dtype_rules.py, refusals/tensor_arguments.py), which no generator made.

Note [dtype-rule statements]
    Each class is drawn with an outcome eager decides by the dtypes alone: *runs* (the jitted call must give
    eager's values, or refuse clearly) or *raises* (the jitted call must raise too)::

        class           eager raises                                   eager runs
        float_result    i.div_(y), i.true_divide_(y), i.atan2_(y),     i.div_(d, rounding_mode='floor'),
                        i.copysign_(y) of an integer or bool i         f.div_(y), f.atan2_(i), f.copysign_(y)
        alpha           i.add_(y, alpha=0.5), f.sub_(y, alpha=True),   i.add_(j, alpha=2), f.add_(i, alpha=0.5),
                        b.add_(c, alpha=0.5)                           b.add_(c, alpha=True),
                                                                       torch.add(i, 2.5, alpha=0.5)
        no_bool_kernel  b.floor_(), b.ceil(), b.round(), b.trunc_(),   the same of integer and floating tensors
                        b.abs() (CPU)
        pow             b ** c, b.pow_(c), True ** c                   b ** True, b.pow_(True), f ** b, i ** b
        lerp            i.lerp_(y, 0.5), f16.lerp_(f32, 0.3), a         f.lerp_(g, 0.5) of one dtype, a 0-d weight
                        weight tensor of another dtype                 of another dtype
        addc            f.addcdiv_(i, j), i.addcmul_(f, f),            f.addcdiv_(f, i.abs() + 1), f.addcmul_(i, i,
                        b.addcmul_(c, c)                               value=0.5), i.addcmul_(j, j, value=0.5)
        logical         x.logical_and_(True), torch.logical_or(x, 0),  x.logical_and_(y), torch.logical_xor(x, y)
                        x.logical_xor(1)
        bool_sub        x - (y > 0), x.sub_(y > 0), (y > 0) - x,       x + (y > 0), x - (y > 0).to(x.dtype)
                        x - True
        number_range    h.clamp_(0, 1e10), h.masked_fill_(h > 0, 1e10),  h.clamp_(0, 1e4), i.fill_(7),
                        i.fill_(2**40), F.hardtanh(i, -2**40, 2**40)  F.hardtanh(f, -2, 2), h.masked_fill_(m, 2.5)
        no_kernel       F.silu(i), F.gelu(b), F.softplus(i),           the same of floating tensors
                        F.silu(i, inplace=True), F.glu(i)
        clamp_store     b.clamp_(0, 2), i.clamp_(0, 0.5),              i.clamp_(0, 3), torch.clamp(i, 0, 0.5),
                        torch.clamp(b, False, True)                    f.clamp_(-0.5, 0.5), b.clamp_(c)

    (``i``, ``j`` integer, ``f``, ``g`` floating, ``h`` float16, ``b``, ``c``, ``m`` bool tensors; an operand of the dtype a
    statement needs is the destination itself or a conversion of it a third of the time, else a variable,
    an alias of the destination where the program made one, or a conversion of one.)
    ``i.addcmul_(j, j, value=0.5)`` and ``b ** True`` are refused by name (eager's value differs from
    Thunder's), ``f.lerp_`` with gradients too; the dtype generator documents every clear refusal.

Note [dtype-rule statements keep the stream]
    The statements above are added to a dtype program, never drawn instead of one of its statements: after
    each statement the generator keeps, with probability 0.3, one that eager runs (dropped where eager
    raises after all), and at the end of a program that does not already end in a statement eager rejects,
    with probability 0.15, one that eager raises. Every choice is drawn from ``rules``, a stream of its own
    seeded from the program's ``rng`` state without drawing from it; a statement binds a name of its own
    (``r0``, ``r1``: returned, not offered to later statements) or none, and changes values only, never a
    variable's shape, dtype or memory, which are all the other draws look at. Their own draws look at names,
    shapes and dtypes only, never at memory: the spellings of dtype programs (dtype_spellings.py) keep every
    statement's shape and dtype but may change whether a result is its operand itself (``a.double()`` of a
    float64 ``a`` against ``(a.double()) * (2.0 if ... else 0.5)``). So every program of every seed keeps its
    statements and returns, with these added, and with or without those spellings
    (``tests/test_fuzz_item_dtype.py::test_dtype_rule_statements_keep_every_stream``).
"""

from __future__ import annotations

import dataclasses
import random
import re

import torch

from fusion_alias.fuzz import dtype_spellings, source
from fusion_alias.fuzz.own_stream_forms import own_stream
from fusion_alias.fuzz.program import Stmt

# Note [a bool exponent, spelled five ways]: ``x ** mask`` of a floating ``x`` that requires grad raises at eager's
# backward (fusion_alias/bool_exponents.py: --grad --strict-backward 31500 #35, #102 found it spelled ``**``; the
# refusal has to be made for each spelling). ``_pow`` respells that statement, from a stream of its own, as
# ``torch.pow``, ``.pow``, ``exponent=``, ``_foreach_pow`` or the in-place ``pow_``.
P_POW_SPELLING = 0.5

CLASSES = ("float_result", "alpha", "no_bool_kernel", "pow", "lerp", "addc", "logical", "bool_sub", "number_range",
           "no_kernel", "clamp_store")
_F = "torch.nn.functional"
# a number past what each dtype holds (Note [a number eager converts to the op's dtype], scalar_ranges.py);
# float64 holds every Python float
_TOO_BIG = {torch.float16: "1e10", torch.bfloat16: "1e39", torch.float32: "1e39", torch.int8: "1000",
            torch.uint8: "1000", torch.int16: "2**20", torch.int32: "2**40", torch.int64: "2**63"}
_INT = (torch.int8, torch.uint8, torch.int16, torch.int32, torch.int64)
# a number of a number_range statement (not a digit of a name: x1, r0)
_NUMBER = re.compile(r"(?<![\w.])-?(?:\d+(?:\.\d*)?(?:e\d+)?(?:\*\*\d+)?|float\('inf'\))")


def _kind(t: torch.Tensor) -> str:
    if t.dtype is torch.bool:
        return "bool"
    if t.dtype in _INT:
        return "int"
    return "complex" if t.is_complex() else "float"


class RuleStatements:
    """The dtype-rule statements of one program (module Notes), against the generator's live eager ``env``."""

    def __init__(self, seed: str, env: dict, names: list[str]):
        self.rules = random.Random(seed + ":dtype-rules")
        # --special-values only: dtype_spellings.py, Note [special and huge numbers in dtype programs]
        self.special = random.Random(seed + ":dtype-rules-special")
        self.env = env
        self.names = names  # (the generator's list, read only)
        self.count = 0

    # --- the generator's two hooks ---

    def extra(self) -> Stmt | None:
        """A statement eager runs, or None (probability 0.7)."""
        if self.rules.random() >= 0.3:
            return None
        return self._statement(self.rules.choice(CLASSES), raises=False)

    def raising(self) -> list[Stmt]:
        """A last statement eager raises at, or none (probability 0.85)."""
        if self.rules.random() >= 0.15:
            return []
        s = self._statement(self.rules.choice(CLASSES), raises=True)
        return [s] if s is not None else []

    # --- operands ---

    def _tensors(self, *kinds: str) -> list[str]:
        return [v for v in self.names if v in self.env and _kind(self.env[v]) in kinds]

    def _into(self, v: str, x: str) -> bool:
        try:
            return tuple(torch.broadcast_shapes(self.env[v].shape, self.env[x].shape)) == tuple(self.env[x].shape)
        except RuntimeError:
            return False

    def _operand(self, x: str, kind: str, dtype: torch.dtype | None = None) -> tuple[str, tuple[str, ...]]:
        """(an operand of ``kind`` (``dtype``) that broadcasts into ``x``, the variables it reads): ``x`` itself or
        a conversion of it (read before the write: the same memory) a third of the time, else a variable of that
        kind (an alias of ``x`` where the program made one), or a conversion of another."""
        r = self.rules
        ok = [v for v in self.names if v in self.env and self._into(v, x)]
        exact = [v for v in ok if (self.env[v].dtype == dtype if dtype is not None else _kind(self.env[v]) == kind)]
        roll = r.random()
        if roll < 0.35:
            v = x
        elif exact and roll < 0.85:
            v = r.choice(exact)
        else:
            v = r.choice([u for u in ok if _kind(self.env[u]) != "complex"] or [x])
        if self.env[v].dtype == dtype or (dtype is None and _kind(self.env[v]) == kind):
            return v, (v,)
        if dtype is not None:
            return f"{v}.to(torch.{str(dtype).removeprefix('torch.')})", (v,)
        conversion = {"bool": "({v} > 0)", "int": "{v}.to(torch.int32)", "float": "{v}.float()"}[kind]
        return conversion.format(v=v), (v,)

    def _dest(self, *kinds: str) -> str | None:
        """A variable of one of ``kinds`` to write, chosen by dtype alone (Note [dtype-rule statements keep the
        stream]: an expanded one, eager rejects)."""
        ok = self._tensors(*kinds)
        return self.rules.choice(ok) if ok else None

    def _named(self, code: str, reads: tuple[str, ...]) -> Stmt:
        t = f"r{self.count}"
        self.count += 1
        return Stmt(f"{t} = {code}", target=t, reads=tuple(dict.fromkeys(reads)))

    # --- the classes ---

    def _statement(self, cls: str, raises: bool) -> Stmt | None:
        return getattr(self, f"_{cls}")(raises)

    def _write(self, x: str, op: str, reads: tuple[str, ...] = ()) -> Stmt:
        return Stmt(f"{x}.{op}", reads=tuple(dict.fromkeys((x,) + reads)), writes=x)

    def _float_result(self, raises: bool) -> Stmt | None:
        r = self.rules
        if raises:
            x = self._dest("int", "bool")
            if x is None:
                return None
            y, ys = self._operand(x, r.choice(("int", "bool", "float")))
            op = r.choice(("div_", "true_divide_", "atan2_", "copysign_"))
            return self._write(x, f"{op}({y})", ys) if r.random() < 0.8 else self._write(x, f"{op}(2)")
        x = self._dest("int", "float")
        if x is None:
            return None
        if _kind(self.env[x]) == "int":
            y, ys = self._operand(x, "int")
            mode = r.choice(("floor", "trunc"))
            return self._write(x, f"div_({y}.abs() + 1, rounding_mode={mode!r})", ys)
        y, ys = self._operand(x, r.choice(("int", "float", "bool")))
        return self._write(x, f"{r.choice(('div_', 'true_divide_', 'atan2_', 'copysign_'))}({y})", ys)

    def _alpha(self, raises: bool) -> Stmt | None:
        r = self.rules
        x = self._dest("int", "float", "bool")
        if x is None:
            return None
        kind = _kind(self.env[x])
        op = r.choice(("add_", "sub_")) if kind != "bool" else "add_"
        if raises:
            alpha = {"int": r.choice(("0.5", "True")), "float": "True", "bool": "0.5"}[kind]
            y, ys = self._operand(x, "int" if kind == "int" else kind)
            if r.random() < 0.3 and kind == "int":
                return self._named(f"torch.add({x}, {y}, alpha={alpha})", (x,) + ys)
            return self._write(x, f"{op}({y}, alpha={alpha})", ys)
        if kind == "int" and r.random() < 0.3:
            return self._named(f"torch.add({x}, 2.5, alpha=0.5)", (x,))
        y, ys = self._operand(x, kind if kind != "float" else r.choice(("int", "float")))
        alpha = {"int": r.choice(("2", "-1")), "float": r.choice(("0.5", "2")), "bool": r.choice(("True", "2"))}[kind]
        return self._write(x, f"{op}({y}, alpha={alpha})", ys)

    def _no_bool_kernel(self, raises: bool) -> Stmt | None:
        r = self.rules
        x = self._dest("bool") if raises else self._dest("int", "float")
        inplace = r.choice(("floor_()", "trunc_()", "ceil_()", "round_()", "abs_()"))
        outofplace = r.choice(("ceil()", "round()", "abs()", "floor()", "trunc()"))
        if x is not None and r.random() < 0.5:
            return self._write(x, inplace)
        v = x or r.choice([u for u in self.names if u in self.env and _kind(self.env[u]) != "complex"] or [None])
        if v is None:
            return None
        if raises and _kind(self.env[v]) != "bool":
            return self._named(f"({v} > 0).{outofplace}", (v,))
        return self._named(f"{v}.{outofplace}", (v,))

    def _pow(self, raises: bool) -> Stmt | None:
        r = self.rules
        b = self._dest("bool")
        if raises:
            if b is not None and r.random() < 0.5:
                c, cs = self._operand(b, "bool")
                return self._write(b, f"pow_({c})", cs)
            v = r.choice([u for u in self.names if u in self.env] or [None])
            if v is None:
                return None
            m = v if _kind(self.env[v]) == "bool" else f"({v} > 0)"
            return self._named(r.choice((f"{m} ** {m}", f"True ** {m}")), (v,))
        if b is not None and r.random() < 0.5:
            return self._write(b, "pow_(True)") if r.random() < 0.5 else self._named(f"{b} ** True", (b,))
        x = self._dest("int", "float")
        if x is None:
            return None
        e, es = self._operand(x, "bool")
        s = own_stream(self.rules, f"pow spelling {self.count}")  # (P_POW_SPELLING 0: every program as it was)
        if P_POW_SPELLING > 0 and s.random() < P_POW_SPELLING:  # Note [a bool exponent, spelled five ways]
            k = s.randrange(5)
            if k == 4:
                return self._write(x, f"pow_({e})", es)
            return self._named((f"torch.pow({x}, {e})", f"{x}.pow({e})", f"torch.pow({x}, exponent={e})",
                                f"torch._foreach_pow([{x}], [{e}])[0]")[k], (x,) + es)
        return self._named(f"{x} ** {e}", (x,) + es)

    def _lerp(self, raises: bool) -> Stmt | None:
        r = self.rules
        if raises:
            x = self._dest("int", "bool", "float")
            if x is None:
                return None
            if _kind(self.env[x]) == "float":  # another floating dtype for end or weight
                other = r.choice([d for d in (torch.float16, torch.float32, torch.float64) if d != self.env[x].dtype])
                y, ys = self._operand(x, "float", other)
                return self._write(x, f"lerp_({y}, 0.3)", ys) if r.random() < 0.6 else \
                    self._named(f"torch.lerp({x}, {x}, {y})", (x,) + ys)
            y, ys = self._operand(x, _kind(self.env[x]))
            return self._write(x, f"lerp_({y}, 0.5)", ys) if r.random() < 0.5 else \
                self._named(f"torch.lerp({x}, {y}, 0.5)", (x,) + ys)
        x = self._dest("float")
        if x is None:
            return None
        y, ys = self._operand(x, "float", self.env[x].dtype)
        if r.random() < 0.5:
            return self._write(x, f"lerp_({y}, {r.choice(('0.5', '0.25', '1.5'))})", ys)
        others = [v for v in self._tensors("float") if self.env[v].dim() and self.env[v].dtype != self.env[x].dtype]
        if others and r.random() < 0.5:  # a 0-d weight of another floating dtype: eager takes it
            v = r.choice(others)
            return self._named(f"torch.lerp({x}, {y}, {v}.flatten()[0])", (x,) + ys + (v,))
        return self._named(f"torch.lerp({x}, {y}, {y})", (x,) + ys)

    def _addc(self, raises: bool) -> Stmt | None:
        r = self.rules
        if raises:
            x = self._dest("float", "int", "bool")
            if x is None:
                return None
            kind = _kind(self.env[x])
            if kind == "float":
                i, i_reads = self._operand(x, "int")
                j, j_reads = self._operand(x, "int")
                return self._write(x, f"addcdiv_({i}, {j}.abs() + 1)", i_reads + j_reads)
            if kind == "int":
                f, fs = self._operand(x, "float")
                return self._write(x, f"{r.choice(('addcmul_', 'addcdiv_'))}({f}, {f}.abs() + 1)", fs)
            c, cs = self._operand(x, "bool")
            return self._write(x, f"addcmul_({c}, {c})", cs)
        x = self._dest("float", "int")
        if x is None:
            return None
        if _kind(self.env[x]) == "int":
            j, js = self._operand(x, "int")
            return self._write(x, f"addcmul_({j}, {j}, value={r.choice(('0.5', '2', '-1'))})", js)
        i, i_reads = self._operand(x, "int")
        f, f_reads = self._operand(x, "float")
        op = r.choice((f"addcdiv_({f}, {i}.abs() + 1)", f"addcdiv_({i}, {f}.abs() + 1)",
                       f"addcmul_({i}, {i}, value=0.5)", f"addcmul_({i}, {f})"))
        return self._write(x, op, i_reads + f_reads)

    def _logical(self, raises: bool) -> Stmt | None:
        r = self.rules
        x = self._dest("bool", "int", "float")
        if x is None:
            return None
        if raises:
            number = r.choice(("True", "0", "1", "0.5"))
            op = r.choice(("logical_and", "logical_or", "logical_xor"))
            if r.random() < 0.5:
                return self._write(x, f"{op}_({number})")
            return self._named(r.choice((f"torch.{op}({x}, {number})", f"{x}.{op}({number})")), (x,))
        y, ys = self._operand(x, r.choice(("bool", "int", "float")))
        op = r.choice(("logical_and", "logical_or", "logical_xor"))
        if r.random() < 0.5:
            return self._write(x, f"{op}_({y})", ys)
        return self._named(f"torch.{op}({x}, {y})", (x,) + ys)

    def _bool_sub(self, raises: bool) -> Stmt | None:
        r = self.rules
        x = self._dest("int", "float") if not raises else self._dest("int", "float", "bool")
        if x is None:
            return None
        m, ms = self._operand(x, "bool")
        if raises and r.random() < 0.2:  # a Python bool: eager refuses it as it refuses a bool tensor
            return self._write(x, "sub_(True)") if r.random() < 0.5 else self._named(f"{x} - False", (x,))
        if raises:
            form = r.choice(("sub_({m})", "{x} - {m}", "{m} - {x}", "torch.sub({x}, {m})"))
            if form.startswith("sub_"):
                return self._write(x, form.format(m=m), ms)
            return self._named(form.format(x=x, m=m), (x,) + ms)
        return self._named(r.choice((f"{x} + {m}", f"{x} - {m}.to({x}.dtype)")), (x,) + ms)


    def _number_range(self, raises: bool) -> Stmt | None:
        s = self._number_range_drawn(raises)
        if s is None or not source.SPECIAL_VALUES or self.special.random() >= 1 / 3:
            return s
        # --special-values: one of the statement's numbers (a bound, a fill value, the mask's 0) another, drawn after
        # every ``rules`` draw (Note [special and huge numbers in dtype programs], dtype_spellings.py); a statement
        # eager runs that now raises is dropped, one eager raises at that now runs is not added
        x = s.writes or s.reads[0]
        numbers = list(_NUMBER.finditer(s.code))
        if not numbers:
            return s
        m = self.special.choice(numbers)
        n = dtype_spellings.special_number(self.special, self.env[x].dtype)
        return dataclasses.replace(s, code=s.code[:m.start()] + n + s.code[m.end():])

    def _number_range_drawn(self, raises: bool) -> Stmt | None:
        r = self.rules
        x = self._dest("float", "int")
        if x is None:
            return None
        dtype = self.env[x].dtype
        if raises:
            big = _TOO_BIG.get(dtype)
            if big is None:
                return None  # (float64 holds every number)
            if _kind(self.env[x]) == "float":
                form = r.choice((f"clamp_(0, {big})", f"masked_fill_({x} > 0, -{big})", f"fill_({big})",
                                 f"pow_({big})" if dtype is torch.float16 else f"clamp_(max={big})"))
                return self._write(x, form) if r.random() < 0.7 else \
                    self._named(f"{_F}.hardtanh({x}, -{big}, {big})", (x,))
            if r.random() < 0.6 or dtype is torch.uint8:
                return self._write(x, r.choice((f"fill_({big})", f"masked_fill_({x} > 0, {big})")))
            return self._named(f"{_F}.hardtanh({x}, -{big}, {big})", (x,))
        if _kind(self.env[x]) == "float":
            form = r.choice(("clamp_(0, 1e4)", f"masked_fill_({x} > 0, 2.5)", "fill_(-3.5)", "clamp_(max=float('inf'))"))
            return self._write(x, form) if r.random() < 0.7 else self._named(f"{_F}.hardtanh({x}, -2, 2)", (x,))
        return self._write(x, r.choice(("fill_(7)", f"masked_fill_({x} > 0, 3)", "clamp_(0, 3)")))

    def _no_kernel(self, raises: bool) -> Stmt | None:
        r = self.rules
        fn = r.choice(("silu", "gelu", "softplus", "elu", "mish", "hardsigmoid", "logsigmoid", "leaky_relu", "glu"))
        x = self._dest("int", "bool") if raises else self._dest("float")
        if x is None:
            return None
        if fn == "glu":
            if self.env[x].dim() == 0 or self.env[x].shape[-1] % 2:
                return None
            return self._named(f"{_F}.glu({x}, -1)", (x,))
        if fn in ("silu", "elu", "hardsigmoid") and r.random() < 0.5 and (not raises or _kind(self.env[x]) == "int"):
            return Stmt(f"{_F}.{fn}({x}, inplace=True)", reads=(x,), writes=x)
        return self._named(f"{_F}.{fn}({x})", (x,))

    def _clamp_store(self, raises: bool) -> Stmt | None:
        r = self.rules
        if raises:
            x = self._dest("int", "bool")
            if x is None:
                return None
            if _kind(self.env[x]) == "bool":
                return self._write(x, "clamp_(0, 2)") if r.random() < 0.5 else \
                    self._named(f"torch.clamp({x}, False, True)", (x,))
            return self._write(x, r.choice(("clamp_(0, 0.5)", "clamp_(min=-0.5)", "clamp_max_(2.5)")))
        x = self._dest("int", "float", "bool")
        if x is None:
            return None
        kind = _kind(self.env[x])
        if kind == "bool":
            c, cs = self._operand(x, "bool")
            return self._write(x, f"clamp_({c})", cs)
        if kind == "int":
            return self._write(x, "clamp_(0, 3)") if r.random() < 0.5 else \
                self._named(f"torch.clamp({x}, 0, 0.5)", (x,))
        return self._write(x, r.choice(("clamp_(-0.5, 0.5)", "clamp_min_(0)", "clamp_(max=2)")))
