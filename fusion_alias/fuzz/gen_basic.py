"""The basic generator: float32 inputs that share memory (the same tensor twice,
slices, transposes, strided halves, a scalar) and a body of view, in-place and
out-of-place statements. The other generators extend its statement maker."""

from __future__ import annotations

import math
import random
import re
from typing import Sequence

import torch

from fusion_alias.fuzz import foreach_spellings, identity_spellings, opaque_spellings, out_spellings, saving_ops, source
from fusion_alias.fuzz.hazard import _has_internal_overlap, _overlaps
from fusion_alias.fuzz.program import PARAM_NAMES, Stmt

_BASE_SHAPES = ((4, 6), (4, 6), (4, 6), (6, 4), (2, 3, 4), (6,), (1, 6), (4, 1, 6))


def _index_expr(rng: random.Random, shape: Sequence[int]) -> str | None:
    """A random basic-indexing expression valid for ``shape`` (None for 0-d)."""
    if not shape:
        return None
    k = rng.randint(1, min(len(shape), 2))
    parts = []
    for d in range(k):
        n = shape[d]
        choice = rng.choice(("int", "range", "step", "step1", "from", "all") if n > 1 else ("int", "all"))
        if choice == "int":
            parts.append(str(rng.randrange(n)))
        elif choice == "range":
            lo = rng.randrange(n - 1)
            hi = rng.randint(lo + 1, n)
            parts.append(f"{lo}:{hi}")
        elif choice == "step":
            parts.append("::2")
        elif choice == "step1":
            parts.append("1::2")
        elif choice == "from":
            parts.append(f"{rng.randint(1, n - 1)}:")
        else:
            parts.append(":")
    if all(x == ":" for x in parts):
        parts[-1] = str(rng.randrange(shape[k - 1]))
    return "[" + ", ".join(parts) + "]"


def _alias_expr(rng: random.Random, base: str, shape: Sequence[int]) -> str:
    """An argument that aliases ``base``: itself, a slice, a transpose, a scalar..."""
    options = ["same", "index", "index"]
    if len(shape) >= 2:
        options += ["t", "halves", "scalar"]
    if len(shape) >= 1:
        options += ["flat"]
    kind = rng.choice(options)
    if kind == "same":
        return base
    if kind == "t":
        return f"{base}.transpose(0, 1)" if len(shape) > 2 else f"{base}.t()"
    if kind == "halves" and shape[1] > 1:
        return f"{base}[:, {rng.choice(('::2', '1::2'))}]"
    if kind == "scalar":
        return f"{base}[{', '.join(str(rng.randrange(n)) for n in shape)}]"
    if kind == "flat":
        return f"{base}.view(-1)"
    return f"{base}{_index_expr(rng, shape)}"


def _gen_inputs(rng: random.Random):
    nargs = rng.choice((1, 2, 2, 2, 3, 3, 4))
    bases: list[tuple[str, tuple[int, ...]]] = []
    args: list[tuple[str, str]] = []
    aliased = rng.random() < 0.8  # most programs get at least one aliased pair
    for i in range(nargs):
        new_base = not bases or (rng.random() < (0.2 if aliased else 0.8))
        if new_base:
            shape = rng.choice(_BASE_SHAPES)
            name = f"x{len(bases)}"
            bases.append((name, shape))
            # an argument is usually the base itself, sometimes a view of it
            expr = name if rng.random() < 0.75 else _alias_expr(rng, name, shape)
        else:
            name, shape = rng.choice(bases)
            expr = _alias_expr(rng, name, shape)
        args.append((PARAM_NAMES[i], expr))
    return tuple(bases), tuple(args)


def _factor_shapes(n: int) -> list[tuple[int, ...]]:
    out = [(n,)]
    for a in range(1, n + 1):
        if n % a == 0:
            out.append((a, n // a))
            for b in range(1, n // a + 1):
                if (n // a) % b == 0 and a * b * (n // a // b) == n and n // a // b > 0:
                    out.append((a, b, n // a // b))
    return out


class _Gen:
    """Generates one statement at a time against a live eager environment.

    Note [detach spellings keep the stream]
        ``x.detach()`` is ``x``'s memory, sizes, strides and values without autograd history: fusion_alias
        reads it as the same view in calls that compute no gradient and refuses writes through it where
        gradients flow (leaf_views.py, Note [detach is the same view]). Some statements read or write
        through it: a view of a detached tensor (``t0 = a.detach()[1:3]``, ``a.detach().t()``), an
        in-place op through one (``a.detach().mul_(2.0)``, ``a.detach()[0] = b``, then reads of ``a``),
        an operand detached (``a.mul_(a.detach())``, ``a.add_(b.detach())``). The generator's eager run
        has no gradients, so such a spelling changes no value it sees; it is drawn from ``side``, a second
        generator seeded from ``rng``'s state without drawing from it, so every program of every seed is
        the one it was before these spellings existed, with ``.detach()`` written into some statements.

    Note [mask spellings keep the stream]
        Bool-mask chains feeding an in-place write (session 16): an in-place op's operand ``y`` spelled
        ``torch.where(x > 0, y, x)``, ``(z > 0).float().sigmoid()``, ``y * (z > 0)``... (the mask of the
        destination itself, read before the write, or of another tensor, an alias of it as often as not),
        and an out-of-place ``torch.sigmoid(x)`` / ``torch.relu(x)`` / ``x.abs()`` spelled as a chain of
        ``x > 0`` (a result later statements may write in place). A spelling keeps the shapes, dtypes and
        memory of every variable the generator sees; only values change, and no draw of ``rng`` depends on
        a value (eager rejects by shapes, dtypes and overlap here). It is drawn from ``spell``, a third
        generator seeded apart from ``side``, so the ``.detach()`` spellings of every program are those
        they were. An operand that overlaps its destination at other indices is never spelled
        (``_maskable``): the op is ill-defined or rejected by eager, and a chain, a fresh tensor, would
        make it defined, another program.
    """

    def __init__(self, rng: random.Random, env: dict, names: list[str]):
        self.rng = rng
        self.env = env
        self.names = names  # defined tensor variables, in definition order
        self.counter = 0
        self.side = random.Random(str(rng.getstate()[1][:16]))  # Note [detach spellings keep the stream]
        self.spell = random.Random(str(rng.getstate()[1][:16]) + ":spell")  # Note [mask spellings keep the stream]
        self.foreach_spell = random.Random(str(rng.getstate()[1][:16]) + ":foreach")  # foreach_spellings.py
        # identity_spellings.py, Note [identity and list-key spellings keep the stream]
        self.ident = random.Random(str(rng.getstate()[1][:16]) + ":identity")
        self.out_spell = random.Random(str(rng.getstate()[1][:16]) + ":out")  # Note [out= spellings keep the stream]
        self.list_dst = random.Random(str(rng.getstate()[1][:16]) + ":list-dst")  # (identity_spellings.py, session 20)
        self.opaque = random.Random(str(rng.getstate()[1][:16]) + ":opaque")  # (opaque_spellings.py, session 21)
        # Note [views made under no_grad keep the stream]: some views are made under ``torch.no_grad()``
        # (values unchanged; with --grad, eager raises at a later write into one: saved_versions.py,
        # Note [writes into views made under no_grad]), drawn from a stream of their own (session 19)
        self.grad_mode_spell = random.Random(str(rng.getstate()[1][:16]) + ":no_grad")
        self.same_as: dict[str, str] = {}  # the result of an in-place op -> the tensor it was called on
        self.special = random.Random(str(rng.getstate()[1][:16]) + ":special")  # (source.constant)

    def detach_drawn(self, p: float) -> bool:
        """Whether to read a tensor through ``.detach()``: probability ``p``, drawn from ``side`` (Note
        [detach spellings keep the stream])."""
        return self.side.random() < p

    def spell_drawn(self, p: float) -> bool:
        """Whether to spell a statement another way of the same shapes, dtypes and memory: probability ``p``,
        drawn from ``spell`` (Note [mask spellings keep the stream])."""
        return self.spell.random() < p

    def _mask_chain(self, x: str, y_text: str) -> str:
        """A float32 operand built from a bool mask, for an in-place op into ``x`` in place of ``y_text`` (an
        operand that broadcasts into ``x``): its shape broadcasts into ``x``'s too. The mask is of ``x``
        itself (read before the write) or of another float32 tensor that broadcasts into ``x``, an alias of
        it as often as not (Note [mask spellings keep the stream])."""
        s = self.spell
        xs = self.shape(x)
        others = [v for v in self.names if self.env[v].dtype == torch.float32 and _broadcasts_into(self.shape(v), xs)]
        z = s.choice([x, x] + others)
        return s.choice((f"torch.where({z} > 0, {y_text}, {x})", f"({z} > 0).float().sigmoid()",
                         f"{y_text} * ({z} > 0)", f"torch.where({z} < 0, -{y_text}, {y_text})",
                         f"({z} > 0).float() * {y_text}", f"torch.where(({z} > 0) & ({y_text} < 0.5), {y_text}, {z})"))

    def _detach_prefix(self, e: str, v: str, p: float) -> str:
        """``e`` (which starts with the variable ``v``), with ``v`` read through ``.detach()`` where
        ``detach_drawn(p)``."""
        if e.startswith(v) and not e[len(v):len(v) + 1].isalnum() and self.detach_drawn(p):
            return f"{v}.detach(){e[len(v):]}"
        return e

    def fresh(self) -> str:
        name = f"t{self.counter}"
        self.counter += 1
        return name

    def shape(self, v: str) -> tuple[int, ...]:
        return tuple(self.env[v].shape)

    def pick(self, writable: bool = False) -> str:
        names = self.names
        if writable:
            ok = [v for v in names if not _has_internal_overlap(self.env[v])]
            # 1 in 10: any variable (eager may reject: expanded tensors)
            if ok and self.rng.random() < 0.9:
                names = ok
        # prefer recent variables a little
        weights = [1.0 + 0.3 * i for i in range(len(names))]
        return self.rng.choices(names, weights)[0]

    def operand(self, x: str, inplace: bool) -> str:
        """A second operand for ``x``: a broadcast-compatible variable (often an
        alias of ``x``) or a constant."""
        rng = self.rng
        if rng.random() < 0.15:
            return source.constant(rng, self.special)
        xs = self.shape(x)
        compatible, aliased = [], []
        for v in self.names:
            try:
                bs = torch.broadcast_shapes(xs, self.shape(v))
            except RuntimeError:
                continue
            if inplace and tuple(bs) != xs:
                continue
            compatible.append(v)
            if v != x and _overlaps(self.env[v], self.env[x]):
                aliased.append(v)
        if aliased and rng.random() < 0.6:
            return rng.choice(aliased)
        if compatible:
            return rng.choice(compatible)
        return source.constant(rng, self.special)

    def _is_var(self, s: str) -> bool:
        return s in self.env

    # --- statement kinds -------------------------------------------------

    def view(self) -> Stmt:
        rng, x = self.rng, self.pick()
        sh = self.shape(x)
        nd = len(sh)
        kinds = ["reshape", "unsqueeze", "view"]
        if nd >= 1:
            kinds += ["index", "index", "select", "narrow", "expand"]
        if nd >= 2:
            kinds += ["t", "transpose", "permute"]
        if 1 in sh:
            kinds += ["squeeze"]
        kind = rng.choice(kinds)
        if kind == "index":
            e = f"{x}{_index_expr(rng, sh)}"
        elif kind == "reshape" or kind == "view":
            n = math.prod(sh)
            shape = rng.choice(_factor_shapes(n)) if n > 0 else (0,)
            arg = "-1" if rng.random() < 0.3 else ", ".join(map(str, shape))
            e = f"{x}.{kind}({arg})"
        elif kind == "select":
            d = rng.randrange(nd)
            e = f"{x}.select({d}, {rng.randrange(sh[d])})"
        elif kind == "narrow":
            d = rng.randrange(nd)
            start = rng.randrange(sh[d])
            e = f"{x}.narrow({d}, {start}, {rng.randint(1, sh[d] - start)})"
        elif kind == "expand":
            if 1 in sh and rng.random() < 0.6:
                new = [3 if s == 1 else s for s in sh]
            else:
                new = [2] + list(sh)
            e = f"{x}.expand({', '.join(map(str, new))})"
        elif kind == "t":
            e = f"{x}.t()" if nd == 2 else f"{x}.transpose(0, 1)"
        elif kind == "transpose":
            d0, d1 = rng.sample(range(nd), 2)
            e = f"{x}.transpose({d0}, {d1})"
        elif kind == "permute":
            perm = list(range(nd))
            rng.shuffle(perm)
            e = f"{x}.permute({', '.join(map(str, perm))})"
        elif kind == "squeeze":
            e = f"{x}.squeeze({sh.index(1)})" if rng.random() < 0.7 else f"{x}.squeeze()"
        else:  # unsqueeze
            e = f"{x}.unsqueeze({rng.randint(-nd - 1, nd)})"
        e = self._detach_prefix(e, x, 0.2)
        t = self.fresh()
        no_grad = "with torch.no_grad(): " if self.grad_mode_spell.random() < 0.15 else ""
        return Stmt(f"{no_grad}{t} = {e}", target=t, view_of=x)

    def inplace(self) -> Stmt:
        rng, x = self.rng, self.pick(writable=True)
        kind = rng.choices(("unary", "binary", "fill", "setitem", "foreach"), (4, 5, 1, 2, 1))[0]
        reads: tuple[str, ...] = (x,)
        if kind == "foreach":
            return self._foreach(x)
        if kind == "unary":
            op = rng.choices(
                ("tanh_()", "sin_()", "neg_()", "exp_()", "mul_(0.5)", "abs_()", "cos_()", "relu_()", "add_(0.25)",
                 "clamp_(-0.5, 0.5)",
                 # Thunder 0.2.6 has these only out of place (fusion_alias/inplace_lookasides.py)
                 "sigmoid_()", "clamp_min_(0.1)", "clamp_max_(-0.1)", "nan_to_num_()", "frac_()", "clip_(-0.3, 0.3)"),
                (3, 3, 3, 1, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1),
            )[0]
            e = f"{x}.{op}"
            if (number := re.fullmatch(r"(\w+_)\((-?[\d.]+)\)", op)) is not None:  # (Note [identity and list-key
                spelled = identity_spellings.identity_number(self.ident, self.env, self.names, self.same_as,  # spellings
                                                             number.group(2))  # keep the stream])
                e = f"{x}.{number.group(1)}({spelled})"
        elif kind == "binary":
            y = self.operand(x, inplace=True)
            op = rng.choices(("add_", "mul_", "sub_", "add_alpha", "copy_", "hypot_"), (3, 2, 2, 1, 2, 1))[0]
            if op == "add_alpha":
                e = f"{x}.add_({y}, alpha={source.constant(rng, self.special)})"
            elif op == "copy_":
                if not self._is_var(y):
                    y = rng.choice(self.names)
                e = f"{x}.copy_({y})"
            else:
                e = f"{x}.{op}({y})"
            if self._is_var(y) and self.detach_drawn(0.5 if y == x else 0.15):
                e = e.replace(f"({y}", f"({y}.detach()", 1)  # (x.mul_(x.detach()): the same memory and index)
            masked = False
            if self.spell_drawn(0.3) and self._is_var(y) and self._maskable(x, y):
                y_text = f"{y}.detach()" if f"({y}.detach()" in e else y  # (Note [mask spellings keep the stream])
                e = e.replace(f"({y_text}", f"({self._mask_chain(x, y_text)}", 1)
                masked = True
            # Note [identity and list-key spellings keep the stream] (identity_spellings.py)
            if not self._is_var(y):
                spelled = identity_spellings.identity_number(self.ident, self.env, self.names, self.same_as, y)
                e = e.replace(f"({y}", f"({spelled}", 1)
            elif not masked and self._maskable(x, y):
                if (g := identity_spellings.gathered(self.ident, self.env, y, 0.2)) is not None:
                    e = e.replace(f"({y}", f"({g}", 1)
            if op == "copy_":
                reads = (y,)
            else:
                reads = (x, y) if self._is_var(y) else (x,)
        elif kind == "fill":
            # fill_ (Thunder 0.2.6 lacks it; fusion_alias/inplace_lookasides.py adds it): a number, or a
            # 0-dim tensor read as a number before the write (any tensor's element: the written one too)
            roll = rng.random()
            reads = ()
            if roll < 0.4:
                e = f"{x}.zero_()"
            elif roll < 0.75:
                e = f"{x}.fill_({source.constant(rng, self.special)})"
            else:
                y = rng.choice(self.names)
                element = "[" + ", ".join("0" for _ in self.shape(y)) + "]" if self.shape(y) else ""
                e = f"{x}.fill_({y}{element})"
                reads = (y,)
        else:  # setitem: a full statement, no result
            idx = _index_expr(rng, self.shape(x))
            if idx is None:
                idx = "[...]"
            try:
                dst_shape = tuple(self.env[x][eval(f"_i{idx}", {"_i": _Indexer()})].shape)
            except Exception:  # noqa: BLE001
                dst_shape = ()
            y = self._setitem_value(dst_shape)
            code = identity_spellings.list_key_destination(self.list_dst, self.env, f"{x}{idx} = {y}")  # (Note [list keys
            return Stmt(self._detach_prefix(code, x, 0.1), reads=(y,) if self._is_var(y) else (), writes=x)  # as ...])
        if rng.random() < 0.3:
            t = self.fresh()
            self.same_as[t] = x  # (identity_spellings.predicate: one object)
            code = out_spellings.out_form(self.out_spell, self.env, f"{t} = {e}")  # (out_spellings.py, Note [out=
            return Stmt(code, target=t, reads=reads, writes=x, inplace_result=True)  # spellings keep the stream])
        code = out_spellings.out_form(self.out_spell, self.env, self._detach_prefix(e, x, 0.1))  # (a write through
        return Stmt(code, reads=reads, writes=x)  # x.detach())

    def _maskable(self, x: str, y: str) -> bool:
        """Whether the operand ``y`` of an in-place op into ``x`` may be spelled as a mask chain (Note [mask
        spellings keep the stream]): both float32, ``y`` broadcasts into ``x``, and ``y`` is ``x``'s memory at
        the same indices or none of it (else the op is ill-defined or eager rejects it, and a chain, a fresh
        tensor, would make it well-defined: another program)."""
        tx, ty = self.env[x], self.env[y]
        if tx.dtype != torch.float32 or ty.dtype != torch.float32 or not _broadcasts_into(tuple(ty.shape), tuple(tx.shape)):
            return False
        return not _overlaps(tx, ty) or (tx.shape == ty.shape and tx.stride() == ty.stride()
                                         and tx.storage_offset() == ty.storage_offset())

    def _foreach(self, x: str) -> Stmt:
        """A ``torch._foreach_*_`` over two or three written tensors (``x`` first; they may be the same
        tensor, or overlap: eager runs one op per tensor in turn), with per-tensor operands, one
        number, or none (fusion_alias/foreach_lookasides.py)."""
        rng = self.rng
        xs = [x] + [self.pick(writable=True) for _ in range(rng.randint(1, 2))]
        ys = [self.operand(v, inplace=True) for v in xs]
        kind = rng.choice(("binary", "scalar", "unary", "lerp", "addc"))
        if kind in ("binary", "lerp", "addc") and all(self._is_var(y) for y in ys):  # (Note [foreach spellings keep
            ys = foreach_spellings.crossed(self.foreach_spell, self.env, xs, ys)  # the stream]: drawn after rng's)
        lst = "[" + ", ".join(foreach_spellings.result_in_list(self.foreach_spell, self.env, xs)) + "]"
        if kind == "addc" and all(self._is_var(y) for y in ys):
            # per-tensor values: a list of numbers, or one tensor of them (torch.optim's Adam when compiling)
            values = [source.constant(rng, self.special) for _ in xs]
            scalars = f"torch.tensor([{', '.join(values)}])" if rng.random() < 0.5 else f"[{', '.join(values)}]"
            ys_list = "[" + ", ".join(ys) + "]"
            code = f"torch._foreach_{rng.choice(('addcmul_', 'addcdiv_'))}({lst}, {ys_list}, {ys_list}, {scalars})"
            reads = tuple(dict.fromkeys((*xs, *ys)))
        elif kind in ("binary", "lerp") and all(self._is_var(y) for y in ys):
            op = rng.choice(("add_", "mul_", "sub_")) if kind == "binary" else "lerp_"
            weight = f", {source.constant(rng, self.special)}" if kind == "lerp" else ""
            lst_ys = foreach_spellings.crossed_rows(self.foreach_spell, self.env, x) or (lst, f"[{', '.join(ys)}]")
            code = f"torch._foreach_{op}({lst_ys[0]}, {lst_ys[1]}{weight})"
            reads = tuple(dict.fromkeys((*xs, *ys)))
        elif kind == "unary":
            code = f"torch._foreach_{rng.choice(('tanh_', 'neg_', 'sigmoid_', 'abs_'))}({lst})"
            reads = tuple(dict.fromkeys(xs))
        else:
            code = f"torch._foreach_{rng.choice(('mul_', 'add_', 'clamp_min_'))}({lst}, {source.constant(rng, self.special)})"
            reads = tuple(dict.fromkeys(xs))
        return Stmt(code, reads=reads, writes=x)  # (``writes`` names the first: the others are written too)

    def bad_inplace(self) -> list[Stmt]:
        """Statements ending in an in-place write that eager rejects: its
        destination has internal overlap (an expanded view), or, half the time,
        an operand partially overlaps it (``x.add_(x[0], alpha=2)``)."""
        rng = self.rng
        if rng.random() < 0.5 and (bad := self._bad_operand()) is not None:
            return bad
        overlapping = [v for v in self.names if _has_internal_overlap(self.env[v])]
        pre: list[Stmt] = []
        if overlapping:
            x = rng.choice(overlapping)
        else:
            v = self.pick()
            x = self.fresh()
            pre.append(Stmt(f"{x} = {v}.expand({', '.join(map(str, (2, *self.shape(v))))})", target=x, view_of=v))
        op = rng.choice(("tanh_()", "add_(0.5)", "mul_(2.0)", "neg_()", f"add_({x})"))
        return pre + [Stmt(f"{x}.{op}", reads=(x,), writes=x)]

    def _bad_operand(self) -> list[Stmt] | None:
        """An in-place op whose operand partially overlaps its destination, spelled
        the ways Thunder decomposes further (alpha, addcmul's value, lerp, setitem):
        eager rejects them all (torch's ``assert_no_partial_overlap``)."""
        rng = self.rng
        x = self.pick(writable=True)
        xs = self.shape(x)
        if not xs:
            return None
        pre: list[Stmt] = []
        views = [f"{x}[0]", f"{x}[0:1]"]
        if len(xs) >= 2 and xs[-1] == xs[-2]:
            views.append(f"{x}.transpose(-1, -2)")
        y = self.fresh()
        pre.append(Stmt(f"{y} = {rng.choice(views)}", target=y, view_of=x))
        c = source.constant(rng, self.special)
        op = rng.choice((f"add_({y}, alpha={c})", f"sub_({y}, alpha={c})", f"addcmul_({y}, {x}, value={c})",
                         f"lerp_({y}, 0.5)", f"clamp_(min={y})", f"mul_({y})", f"div_({y}, rounding_mode='floor')"))
        return pre + [Stmt(f"{x}.{op}", reads=(x, y), writes=x)]

    def _setitem_value(self, dst_shape: tuple[int, ...]) -> str:
        rng = self.rng
        if rng.random() < 0.3:
            return source.constant(rng, self.special)
        ok = []
        for v in self.names:
            try:
                if tuple(torch.broadcast_shapes(dst_shape, self.shape(v))) == dst_shape:
                    ok.append(v)
            except RuntimeError:
                pass
        return rng.choice(ok) if ok else source.constant(rng, self.special)

    def outofplace(self) -> Stmt:
        rng, x = self.rng, self.pick()
        nd = len(self.shape(x))
        kind = rng.choices(("unary", "binary", "reduce"), (4, 4, 2 if nd else 0))[0]
        reads: tuple[str, ...] = (x,)
        if kind == "unary":
            e = rng.choices(
                (f"torch.tanh({x})", f"{x}.sin()", f"-{x}", f"{x} * 0.5", f"{x}.exp()", f"torch.sigmoid({x})",
                 f"{x}.abs()", f"{x}.clone()", f"{x}.cos()", f"torch.relu({x})"),
                (3, 3, 2, 3, 1, 1, 1, 1, 1, 1),
            )[0]
            if e in (f"torch.sigmoid({x})", f"torch.relu({x})", f"{x}.abs()") and self.env[x].dtype == torch.float32 \
                    and self.spell_drawn(0.5):  # a mask chain, later written in place (Note [mask spellings keep the stream])
                e = self.spell.choice((f"({x} > 0).float().sigmoid()", f"{x} * ({x} > 0)",
                                       f"torch.where({x} > 0, {x}, -{x})", f"({x} < 0).float()"))
        elif kind == "binary":
            y = self.operand(x, inplace=False)
            e = rng.choice((f"{x} + {y}", f"{x} * {y}", f"{x} - {y}", f"torch.maximum({x}, {y})",
                            f"{x}.add({y}, alpha=0.5)", f"torch.where({x} > 0, {x}, {y})"))
            if e.startswith("torch.maximum") and not self._is_var(y):
                e = f"{x} * {y}"
            reads = (x, y) if self._is_var(y) else (x,)
        else:
            d = rng.randrange(-nd, nd)
            e = rng.choice((f"{x}.sum()", f"{x}.sum({d}, keepdim=True)", f"{x}.amax({d}, keepdim=True)",
                            f"{x}.mean({d})", f"{x}.sum({d})", f"{x}.amax({d})"))
        # Note [identity and list-key spellings keep the stream] (identity_spellings.py), Note [opaque-op spellings keep the stream]
        spelled = opaque_spellings.opaque_in(self.opaque, self.env, identity_spellings.gather_in(self.ident, self.env, e, x), x)
        if self.env[x].is_floating_point():
            spelled = identity_spellings.identity_factor(self.ident, self.env, self.names, self.same_as, spelled)
        e = saving_ops.saving_in(self.opaque, self.env, identity_spellings.if_same_result(self.env, e, spelled), x)
        t = self.fresh()
        return Stmt(f"{t} = {e}", target=t, reads=reads)

    def statement(self) -> Stmt:
        kind = self.rng.choices(("view", "inplace", "outofplace"), (3, 5, 3))[0]
        return getattr(self, kind)()


def _broadcasts_into(shape: tuple[int, ...], into: tuple[int, ...]) -> bool:
    try:
        return tuple(torch.broadcast_shapes(shape, into)) == tuple(into)
    except RuntimeError:
        return False


class _Indexer:
    def __getitem__(self, idx):
        return idx
