"""The strided generator: ``as_strided`` views whose elements overlap each other, written in place.

Note [writes into a tensor whose elements overlap each other]
    ``as_strided`` can make a view in which several elements are one memory
    location without a zero stride, so eager's overlap check (which only
    recognises zero strides, as on an ``expand()``ed view) lets a write through:

        x = torch.zeros(6)
        x.as_strided((3, 3), (1, 1)).add_(1)     # eager: x = [1, 2, 3, 2, 1, 0]
        # a fused write-back of the functional result writes each location once:
        #                                        #        x = [1, 1, 1, 1, 1, 0]

    The same view may come in as an argument (``v = x.as_strided((3, 3), (1, 1))``,
    program ``v.add_(1); return x``). Eager's answer is its kernel's loop (each
    location gets the op once per element that refers to it), which a fusion does
    not reproduce: fusion_alias must refuse such a write (an accepted refusal),
    never return a different value (a mismatch). The neighbours must keep working
    and match eager: writes through ``as_strided`` views whose elements do not
    overlap (``x.as_strided((2, 3), (3, 1))``, ``x.as_strided((3,), (2,), 1)``),
    then reads of ``x``; and reads (no writes) of a self-overlapping view of a
    buffer that is written elsewhere. A stride of 0 (eager rejects the write) ends
    some programs (``bad_inplace``).

About 45% of the programs write into a self-overlapping view (with an op whose
result depends on how often a location is updated: ``add_``, ``mul_``, ``tanh_``;
fusion_alias refuses the whole program); the others only read such views, so their
values are compared with eager. Non-overlapping views are mostly ones whose strides
do not interleave (``_SPECS``).

Inputs: one base ``x0`` (1-d or 2-d, 6-24 elements); ``a`` is ``x0`` (or its
flat view), and often ``b`` is an ``as_strided`` view of ``x0`` (overlapping
itself about half the time). ``as_strided`` offsets are absolute in the storage,
so views are taken of tensors whose storage the jitted program shares with eager
(arguments and their views), never of a result a fused region may lay out
differently.
"""

from __future__ import annotations

import math
import random

import torch

from fusion_alias.fuzz.gen_basic import _Gen
from fusion_alias.fuzz.hazard import _has_internal_overlap
from fusion_alias.fuzz.program import PARAM_NAMES, Stmt

_SHAPES = ((6,), (8,), (12,), (3, 4), (4, 6))

# (size, stride, offset) by kind, always among the candidates (the worked examples first):
#   overlap      two elements are one location (no zero stride): writes refused
#   distinct     each stride exceeds the span of the smaller ones: elements apart, writes must run
#   interleaved  elements apart, but the strides interleave ((2, 3) with strides (3, 2)): fusion_alias
#                may refuse a write conservatively (Note [a tensor whose elements overlap each other],
#                overlap.py), never return a different value
_SPECS = {
    "overlap": (((3, 3), (1, 1), 0), ((2, 4), (2, 1), 0), ((4, 3), (1, 2), 0), ((2, 3), (1, 1), 1)),
    "distinct": (((2, 3), (3, 1), 0), ((3,), (2,), 1), ((3, 2), (1, 3), 0), ((2, 2), (4, 1), 1)),
    "interleaved": (((2, 3), (3, 2), 0), ((3, 3), (3, 2), 0), ((2, 2), (3, 2), 1)),
}

# writes whose eager result differs when a location is updated more than once (not zero_, neg_)
_ACCUMULATING = ("add_(1.0)", "mul_(2.0)", "sub_(0.25)", "tanh_()", "mul_(-0.5)")
_WRITES = ("add_(1.0)", "add_(1.0)", "mul_(2.0)", "sub_(0.25)", "neg_()", "tanh_()", "zero_()", "mul_(-0.5)")


def _spec(size, stride, offset) -> str:
    return f"as_strided({tuple(size)!r}, {tuple(stride)!r}{f', {offset}' if offset else ''})"


def _storage_numel(t: torch.Tensor) -> int:
    return t.untyped_storage().nbytes() // t.element_size()


def _fits(size, stride, offset, n: int) -> bool:
    return offset + sum((s - 1) * st for s, st in zip(size, stride)) < n


def _kind(size, stride) -> str:
    """overlap, distinct or interleaved (see ``_SPECS``); zero strides are not generated."""
    if _has_internal_overlap(torch.empty(64).as_strided(size, stride)):
        return "overlap"
    span = 0
    for st, sz in sorted(zip(stride, size)):
        if sz > 1 and st <= span:
            return "interleaved"
        span += st * (sz - 1)
    return "distinct"


def random_spec(rng: random.Random, n: int, kind: str) -> tuple | None:
    """(size, stride, offset) of a view of a storage of ``n`` elements of ``kind`` (``_SPECS``),
    or None when none is found."""
    fixed = [s for s in _SPECS[kind] if _fits(*s, n)]
    if fixed and rng.random() < 0.5:
        return rng.choice(fixed)
    for _ in range(40):
        nd = rng.choice((1, 2, 2, 2))
        size = tuple(rng.randint(2, 4) for _ in range(nd))
        stride = tuple(rng.randint(1, 4) for _ in range(nd))
        offset = rng.choice((0, 0, 1, 2))
        if _fits(size, stride, offset, n) and _kind(size, stride) == kind:
            return size, stride, offset
    return rng.choice(fixed) if fixed else None


def _apart(rng: random.Random) -> str:
    """The kind of a view whose elements do not overlap: mostly distinct, sometimes interleaved."""
    return "interleaved" if rng.random() < 0.15 else "distinct"


def strided_inputs(rng: random.Random) -> dict:
    """One base ``x0``; ``a`` the base (or its flat view), often ``b`` an ``as_strided`` view of it."""
    shape = rng.choice(_SHAPES)
    n = math.prod(shape)
    args = [(PARAM_NAMES[0], "x0" if len(shape) == 1 or rng.random() < 0.7 else "x0.view(-1)")]
    if rng.random() < 0.6:
        spec = random_spec(rng, n, "overlap" if rng.random() < 0.6 else _apart(rng))
        if spec is not None:
            args.append((PARAM_NAMES[1], f"x0.{_spec(*spec)}"))
    if len(args) == 2 and rng.random() < 0.3:  # the two arguments in the other order
        args = [(PARAM_NAMES[0], args[1][1]), (PARAM_NAMES[1], args[0][1])]
    return {"bases": (("x0", shape),), "args": tuple(args)}


class StridedGen(_Gen):
    """``as_strided`` views (overlapping themselves or not) of the arguments, written and read."""

    def __init__(self, rng, env, names):
        super().__init__(rng, env, names)
        self.inputs = list(names)
        self.strided: list[str] = []  # the as_strided views made (the statement may yet be dropped)
        # whether this program writes into views whose elements overlap each other (then fusion_alias
        # refuses it whole); the others read such views and write only through views that do not overlap
        self.writes_overlapping = rng.random() < 0.45

    def _shared(self) -> list[str]:
        """Variables in an argument's storage (arguments and their views, not fresh results)."""
        stores = {self.env[v].untyped_storage().data_ptr() for v in self.inputs}
        return [v for v in self.names if self.env[v].untyped_storage().data_ptr() in stores]

    def _new_spec(self, x: str, overlap: bool) -> str | None:
        spec = random_spec(self.rng, _storage_numel(self.env[x]), "overlap" if overlap else _apart(self.rng))
        return None if spec is None else _spec(*spec)

    def strided_view(self) -> Stmt:
        x = self.rng.choice(self._shared())
        spec = self._new_spec(x, overlap=self.rng.random() < 0.55)
        if spec is None:
            return self.view()
        t = self.fresh()
        self.strided.append(t)
        return Stmt(f"{t} = {x}.{spec}", target=t, view_of=x)

    def strided_write(self) -> Stmt:
        """A write into an ``as_strided`` view: one made earlier (or a view of it), an argument
        that is one, or ``x.as_strided(...).op_()`` in one statement."""
        rng = self.rng
        overlapping = [v for v in self.names if _has_internal_overlap(self.env[v])] if self.writes_overlapping else []
        plain = [v for v in self.names if v not in self.inputs and not _has_internal_overlap(self.env[v])]
        r = rng.random()
        if self.writes_overlapping and not getattr(self, "_wrote_overlapping", False):
            r = 0.0 if overlapping else 0.8  # the first write of such a program is one (inline if no view yet)
            self._wrote_overlapping = True
        if overlapping and r < 0.45:
            x = rng.choice(overlapping)
            op = rng.choice(_ACCUMULATING)
        elif plain and r < 0.7:
            x = rng.choice(plain)
            op = rng.choice(_WRITES)
        else:
            src = rng.choice(self._shared())
            overlap = self.writes_overlapping and (r == 0.8 or rng.random() < 0.6)
            spec = self._new_spec(src, overlap)
            if spec is None:
                return self.write_elsewhere()
            op = rng.choice(_ACCUMULATING if overlap else _WRITES)
            return Stmt(f"{src}.{spec}.{op}", reads=(src,), writes=src)
        if rng.random() < 0.25:
            y = self.operand(x, inplace=True)
            if self._is_var(y):
                return Stmt(f"{x}.add_({y})", reads=(x, y), writes=x)
        return Stmt(f"{x}.{op}", reads=(x,), writes=x)

    def read(self) -> Stmt:
        """A read of an argument (does a write through a view show?) or of a self-overlapping view
        (does a write elsewhere show in it?)."""
        rng = self.rng
        overlapping = [v for v in self.names if _has_internal_overlap(self.env[v])]
        pool = overlapping if overlapping and rng.random() < 0.5 else self._shared()
        v = rng.choice(pool)
        r = self.fresh()
        nd = self.env[v].dim()
        e = rng.choice((f"{v} + 0", f"{v} * 2", f"torch.tanh({v})", f"{v}.sum()")
                       + ((f"{v}.sum(0)", f"{v}.sum(-1)") if nd else ()))
        return Stmt(f"{r} = {e}", target=r, reads=(v,))

    def write_elsewhere(self) -> Stmt:
        """A write into the buffer (not through an overlapping view): a self-overlapping view read later
        must see it."""
        rng = self.rng
        x = rng.choice([v for v in self._shared() if not _has_internal_overlap(self.env[v])] or self.inputs)
        if self.env[x].dim() >= 1 and rng.random() < 0.5:
            i = rng.randrange(self.env[x].shape[0])
            return Stmt(f"{x}[{i}] = {rng.choice((0.5, -1.5, 2.0))}", writes=x)
        return Stmt(f"{x}.{rng.choice(('mul_(2.0)', 'add_(0.5)', 'sin_()'))}", reads=(x,), writes=x)

    def statement(self) -> Stmt:
        kind = self.rng.choices(("strided_view", "strided_write", "read", "write_elsewhere", "view", "outofplace"),
                                (4, 5, 3, 2, 1, 1))[0]
        return getattr(self, kind)()

    def extra_returns(self) -> list[str]:
        """The ``as_strided`` views: their values show what a write did to the buffer."""
        return [v for v in self.strided if v in self.names]

    def bad_inplace(self) -> list[Stmt]:
        """A write into an ``as_strided`` view with a zero stride: eager rejects it, as for ``expand``."""
        x = self.rng.choice(self._shared())
        n = min(_storage_numel(self.env[x]), 4)
        return [Stmt(f"{x}.as_strided(({n},), (0,)).{self.rng.choice(_ACCUMULATING)}", reads=(x,), writes=x)]
