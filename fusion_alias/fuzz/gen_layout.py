"""The layout generator: reshapes that copy, taken before and after writes.

Note [reshape: a view or a copy]
    ``reshape``/``flatten`` return a view when the strides allow it and a copy
    otherwise; ``repeat`` and ``contiguous()`` of a non-contiguous tensor always
    copy; ``view`` raises where ``reshape`` would copy:

        a = x.t()                      # strides (1, 6) on (6, 4): not viewable as (24,)
        v = a.reshape(-1)              # a copy: x.mul_(2) afterwards does not show in v
        w = x.reshape(-1)              # a view: x.mul_(2) shows in w
        r = x.expand(2, 4, 6).reshape(8, 6)   # a copy (stride 0 cannot merge)
        s = x.expand(2, 4, 6).reshape(2, 24)  # a view, with internal overlap
        a.view(-1).add_(1)             # eager raises: view size is not compatible with strides

    So whether a write into ``x`` (or into ``v``) reaches the other depends on
    the layout at the call. Inputs here are often transposed or strided, and
    most views are reshapes of such layouts.

Note [dtype views keep the stream]
    ``view(dtype)`` to a dtype of the same element size (float32 <-> int32) is a view
    of any layout, in eager too; it keeps the sizes, strides and offset. Session 16
    spells some statements through one: a reshape of ``x.t().view(torch.int32)
    .view(torch.float32)`` (or of its ``.detach()``), a write ``x.view(torch.int32)
    .add_(1)`` / ``.bitwise_xor_(-2147483648)`` (the sign bit) / ``.bitwise_and_
    (2147483647)`` (the absolute value), a read ``(v.view(torch.int32) + 0)
    .view(torch.float32)`` (an int32 result in the layout eager gives an elementwise
    op of ``v``, then a float32 view of that layout the program made). Each keeps the
    shapes, dtypes and memory of every variable the generator sees and is drawn from
    the basic generator's ``spell`` stream (gen_basic.py, Note [mask spellings keep the
    stream]), so every seed's program is the one it was, some statements spelled
    through an int32 view.
"""

from __future__ import annotations

import math
import random

import torch

from fusion_alias.fuzz import kernel_layouts
from fusion_alias.fuzz.gen_basic import _factor_shapes, _Gen
from fusion_alias.fuzz.hazard import _overlaps
from fusion_alias.fuzz.program import PARAM_NAMES, Stmt

_SHAPES = ((4, 6), (4, 4), (6, 4), (2, 3, 4), (4, 1, 6))


def _layout_expr(rng: random.Random, base: str, shape: tuple[int, ...]) -> str:
    """An argument over ``base`` that is often not contiguous."""
    nd = len(shape)
    options = [base, f"{base}.transpose(0, 1)" if nd > 2 else f"{base}.t()", f"{base}[:, ::2]",
               f"{base}.transpose(0, -1)", f"{base}[1:]"]
    return rng.choice(options)


def layout_inputs(rng: random.Random) -> dict:
    """1-2 bases; arguments are the bases, their transposes, strided slices."""
    nbases = rng.choice((1, 1, 2))
    bases = [(f"x{i}", rng.choice(_SHAPES)) for i in range(nbases)]
    nargs = rng.randint(1, 3)
    args = []
    for i in range(nargs):
        name, shape = bases[i % nbases]
        args.append((PARAM_NAMES[i], _layout_expr(rng, name, shape)))
    return {"bases": tuple(bases), "args": tuple(args)}


class LayoutGen(_Gen):
    """Reshapes of non-viewable layouts (copies) and of viewable ones (views), among writes."""

    def __init__(self, rng: random.Random, env: dict, names: list[str]):
        super().__init__(rng, env, names)
        self.kernel = kernel_layouts.stream(rng)  # (kernel_layouts.py, Note [a kernel's result written through a reshape])
        self.kernel_results: list[str] = []

    def view(self) -> Stmt:
        if self.rng.random() < 0.15:
            return super().view()
        if kernel_layouts.drawn(self.kernel):  # (Note [a kernel's result written through a reshape])
            x = self.pick()
            e = kernel_layouts.kernel_expr(self.kernel, x, self.env[x])
            if e is not None:
                t = self.fresh()
                self.kernel_results.append(t)
                return Stmt(f"{t} = {e}", target=t, reads=(x,))
        rng, x = self.rng, self.pick()
        sh = self.shape(x)
        nd = len(sh)
        n = math.prod(sh)
        src = x
        if nd >= 2 and rng.random() < 0.5:  # make the layout non-viewable first
            src = rng.choice((f"{x}.t()" if nd == 2 else f"{x}.transpose(0, 1)", f"{x}.transpose(0, -1)",
                              f"{x}[:, ::2]", f"{x}.mT" if nd >= 2 else f"{x}"))
        sh = tuple(eval(src, {}, {x: self.env[x]}).shape)  # the layout's own shape (src may transpose x)
        nd = len(sh)
        shape = rng.choice(_factor_shapes(n)) if n > 0 else (0,)
        kind = rng.choice(("reshape", "flatten", "repeat", "expand_reshape", "contiguous", "reshape_shape",
                           "flatten_range"))
        if kind == "reshape":
            e = f"{src}.reshape(-1)"
        elif kind == "reshape_shape":
            e = f"{src}.reshape({', '.join(map(str, shape))})"
        elif kind == "flatten":
            e = f"{src}.flatten()"
        elif kind == "flatten_range":
            e = f"{src}.flatten(0, 1)" if nd >= 2 else f"{src}.flatten()"
        elif kind == "repeat":
            reps = [rng.choice((1, 2)) for _ in range(max(nd, 1))]
            e = f"{src}.repeat({', '.join(map(str, reps))})"
        elif kind == "expand_reshape":
            k = 2
            if nd == 0:
                e = f"{src}.expand({k}).reshape({k})"
            elif rng.random() < 0.5:  # merges the new dim with dim 0: a copy
                e = f"{src}.expand({k}, {', '.join(map(str, sh))}).reshape({k * sh[0]}{''.join(', ' + str(s) for s in sh[1:])})"
            else:  # merges the trailing dims: a view with internal overlap where strides allow
                e = f"{src}.expand({k}, {', '.join(map(str, sh))}).reshape({k}, -1)"
        else:
            e = f"{src}.contiguous()"
        if self.env[x].dtype == torch.float32 and self.spell_drawn(0.25):  # Note [dtype views keep the stream]
            e = e.replace(src, self.spell.choice((f"{src}.view(torch.int32).view(torch.float32)",
                                                  f"{src}.detach().view(torch.int32).view(torch.float32)")), 1)
        t = self.fresh()
        self.reshaped.append((t, x))
        return Stmt(f"{t} = {e}", target=t, view_of=x)

    @property
    def reshaped(self) -> list[tuple[str, str]]:
        """(result, source) of the reshapes made so far (the statement may yet be dropped)."""
        if not hasattr(self, "_reshaped"):
            self._reshaped: list[tuple[str, str]] = []
        return self._reshaped

    def statement(self) -> Stmt:
        """Often the scenario of Note [reshape: a view or a copy]: reshape, write one side, read the other."""
        rng = self.rng
        if self.kernel_results and (k := self.kernel_results[-1]) in self.env and k not in {x for _, x in self.reshaped}:
            r = self.fresh()  # the kernel result's reshape (Note [a kernel's result written through a reshape])
            self.reshaped.append((r, k))
            return Stmt(f"{r} = {kernel_layouts.reshape_expr(self.kernel, k, self.env[k].dim())}", target=r, view_of=k)
        done = [(t, x) for t, x in self.reshaped if t in self.env and x in self.env]
        if done and rng.random() < 0.7:
            t, x = done[-1]
            written = getattr(self, "_written", None)
            if written is None or written[:2] != (t, x):
                stmt = self._write_around(t, x)
                self._written = (t, x, t if stmt.writes == t else x)
                return stmt
            if rng.random() < 0.7:
                # read the other side with an op: a fused region computes it from the memory it thinks it reads
                v = x if written[2] == t else t
                r = self.fresh()
                e = rng.choice((f"{v} + 0", f"{v} * 1", f"torch.tanh({v})", f"{v}.sin()", f"{v}.sum(0)"))
                if e in (f"{v} + 0", f"{v} * 1") and self.env[v].dtype == torch.float32 and self.spell_drawn(0.5):
                    e = f"({v}.view(torch.int32){e[len(v):]}).view(torch.float32)"  # Note [dtype views keep the stream]
                return Stmt(f"{r} = {e}", target=r, reads=(v,))
        kind = rng.choices(("view", "inplace", "outofplace"), (6, 4, 2))[0]
        return getattr(self, kind)()

    def _write_around(self, t: str, x: str) -> Stmt:
        """A write into the reshape's source (or what shares its memory) or into the reshape
        itself: whether it shows on the other side is the view-or-copy question."""
        rng = self.rng
        if rng.random() < 0.5:
            target = x
            sharing = [v for v in self.names if v != t and _overlaps(self.env[v], self.env[x])]
            if sharing:
                target = rng.choice(sharing)
        else:
            target = t
        op = rng.choice(("mul_(2.0)", "add_(1.0)", "neg_()", "zero_()", "tanh_()"))
        if self.env[target].dtype == torch.float32 and self.spell_drawn(0.3):  # Note [dtype views keep the stream]
            op = "view(torch.int32)." + self.spell.choice(("add_(1)", "bitwise_xor_(-2147483648)", "bitwise_and_(2147483647)"))
        return Stmt(f"{target}.{op}", reads=(target,), writes=target)

    def extra_returns(self) -> list[str]:
        """The reshapes: their values show whether a write went through them (and the kernel results reshaped)."""
        return [t for t, _ in self.reshaped if t in self.names] + [k for k in self.kernel_results if k in self.names]

    def bad_inplace(self) -> list[Stmt]:
        """``view`` of a layout that is not viewable, then a write into it: eager raises at the view."""
        rng = self.rng
        noncontig = [v for v in self.names if not self.env[v].is_contiguous() and self.env[v].dim() >= 1]
        if noncontig and rng.random() < 0.7:
            x = rng.choice(noncontig)
            return [Stmt(f"{x}.view(-1).{rng.choice(('add_(1)', 'mul_(2.0)', 'zero_()', 'neg_()'))}",
                         reads=(x,), writes=x)]
        x = self.pick()
        if self.env[x].dim() >= 2:
            return [Stmt(f"{x}.transpose(0, 1).view(-1).add_(1)", reads=(x,), writes=x)]
        return super().bad_inplace()
