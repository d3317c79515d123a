"""One-operand ``torch.einsum`` statements in the ``basic``, ``hidden`` and ``calls`` generators, written through later.

Note [one-operand einsum views in the fuzzer]
    Session 46 (fusion_alias/einsum_views.py, Note [an einsum that takes a diagonal is a view]): eager's
    ``torch.einsum`` of one operand whose letters all stay in the output returns a view of it (``"ij->ji"`` a
    permute, ``"ii->i"``, ``"iij->ji"``, ``"...ii->...i"`` a diagonal, the implicit ``"ji"`` a transpose). Thunder
    0.2.6 decomposed the diagonal ones into new memory, and a write through the result was lost, silently; no
    generator wrote an einsum into the basic streams, so no fuzz run could find it. Here, with probability
    ``P_EINSUM_VIEW`` a statement of a program of ``KINDS`` is instead an einsum of one float tensor ``x`` (sliced
    where a diagonal needs two dims of one size), named ``ev<n>``::

        ev0 = torch.einsum('ii->i', a[:, :4])        # a diagonal of a: a view
        ev1 = torch.einsum('kij->jki', t2)            # a permute; also '...ii->...i', 'ji' (implicit), 'ij -> ji'
        ev2 = torch.einsum(a, [0, 0], [0])            # the sublist spelling
        ev3 = torch.einsum('ij->i', t1)               # one in P_SUMMING sums a letter: new memory ('ii' the trace)

    and later statements (each drawn with probability ``P_FOLLOW``) write through it and read what it came from::

        ev0.mul_(2.0)                                 # (or ev0[0].add_(0.5), ev0.zero_(), ev0.sub_(ev0))
        er1 = a * 0.5                                 # (or a read of ev0 itself)

    The finished program returns every ``er<n>`` it holds (``finish``), so with gradients the loss reads them, and
    without gradients every ``ev<n>`` too (with gradients a returned diagonal view is refused by design). Drawn from a stream of its own seeded from ``rng``'s state without drawing from it (``EinsumViewGen.ev``):
    with ``P_EINSUM_VIEW`` 0 every program is the one it was (tests/test_fuzz.py sets it to 0).
"""

from __future__ import annotations

import random
import re

import torch

from fusion_alias.fuzz import out_spellings
from fusion_alias.fuzz.foreach_functions import ForeachFnGen
from fusion_alias.fuzz.own_stream_forms import own_stream
from fusion_alias.fuzz.program import Program, Stmt

P_EINSUM_VIEW = 0.06  # of a statement of a program of KINDS (tests set it to 0: the streams before session 46)
P_FOLLOW = 0.6  # a statement is the next write through (or read after) the last einsum's result
P_SUMMING = 0.25  # an equation that sums a letter: new memory, which must stay apart from its operand
P_SUBLIST = 0.0  # torch.einsum(x, [0, 0], [0]): Thunder 0.2.6 raises NotImplementedError (sublist inputs), plain too
P_IMPLICIT = 0.2  # 'ji' for 'ji->ij'
P_SPACES = 0.15  # 'ij -> ji'
KINDS = ("basic", "hidden", "calls")
_LETTERS = "ijklmn"
_NAME = re.compile(r"^(e[vr]\d+) = ")


def equation(s: random.Random, shape: tuple[int, ...]) -> tuple[str, str, bool] | None:
    """``(slice, equation, is_view)`` for an operand of ``shape``: ``slice`` the key making two dims one size (or
    ""); None where ``shape`` has no dims."""
    r = len(shape)
    if r == 0:
        return None
    letters = s.sample(_LETTERS, r)
    key, diag = "", None
    if r >= 2 and s.random() < 0.6:  # a diagonal of two dims (one size: the larger sliced)
        d0, d1 = sorted(s.sample(range(r), 2))
        m = min(shape[d0], shape[d1])
        if m > 0:
            diag = (d0, d1)
            letters[d1] = letters[d0]
            if shape[d0] != shape[d1]:
                key = "[" + ", ".join(f":{m}" if d in diag and shape[d] != m else ":" for d in range(r)) + "]"
                key = re.sub(r"(, :)+\]$", "]", key)
    unique = list(dict.fromkeys(letters))
    summing = s.random() < P_SUMMING
    out = unique[:]
    s.shuffle(out)
    if summing:
        out = out[:-1] if len(out) > 1 or s.random() < 0.5 else out
        if out == unique and diag is None:
            out = out[:-1]
    lhs, rhs = "".join(letters), "".join(out)
    view = len(out) == len(unique)
    if diag is not None and diag[1] == r - 1 and diag[0] == r - 2 and r >= 2 and s.random() < 0.4:
        # the ellipsis spelling: '...ii->...i' (the dims before it kept in order)
        tail = letters[-2:]
        keep = tail[0] if tail[0] in out else ""  # (kept: a view; else the trace of the last two dims)
        return key, f"...{''.join(tail)}->...{keep}", bool(keep)
    if view and diag is None and out != sorted(out) and s.random() < P_IMPLICIT:
        # implicit output: the letters sorted; spell the input so that sorting gives ``out``'s order
        rename = dict(zip(out, sorted(out)))
        return key, "".join(rename[t] for t in letters), view
    if summing and diag is not None and len(unique) == 1 and s.random() < 0.5:
        return key, lhs, False  # 'ii' implicit: the trace
    sep = " -> " if s.random() < P_SPACES else "->"
    return key, f"{lhs}{sep}{rhs}", view


def _sublist(eq: str) -> str | None:
    """The sublist arguments of ``eq`` (``"ij->ji"`` -> ``[0, 1], [1, 0]``), None for an ellipsis or implicit one."""
    if "..." in eq or "->" not in eq:
        return None
    lhs, rhs = (p.strip() for p in eq.split("->"))
    ids = {t: i for i, t in enumerate(dict.fromkeys(lhs))}
    return f"[{', '.join(str(ids[t]) for t in lhs)}], [{', '.join(str(ids[t]) for t in rhs)}]"


class EinsumViewGen(ForeachFnGen):
    """The statements of ``ForeachFnGen``, some of them one-operand einsums written through later (module Note)."""

    def __init__(self, rng: random.Random, env: dict, names: list[str]):
        super().__init__(rng, env, names)
        self.ev = own_stream(rng, "einsum views")
        self.ev_count = 0
        self.ev_todo: list[tuple[str, str, str]] = []  # (step, einsum result, operand variable)

    def statement(self) -> Stmt:
        if P_EINSUM_VIEW > 0:
            if self.ev_todo and self.ev.random() < P_FOLLOW and (s := self._follow()) is not None:
                return s
            if self.ev.random() < P_EINSUM_VIEW and (s := self._einsum()) is not None:
                return s
        return super().statement()

    def _name(self, prefix: str) -> str:
        self.ev_count += 1
        return f"{prefix}{self.ev_count - 1}"

    def _einsum(self) -> Stmt | None:
        s = self.ev
        pool = [v for v in self.names if isinstance(self.env.get(v), torch.Tensor)
                and self.env[v].dtype in (torch.float32, torch.float64) and self.env[v].dim() >= 1]
        if not pool:
            return None
        x = s.choice(pool)
        got = equation(s, tuple(self.env[x].shape))
        if got is None:
            return None
        key, eq, view = got
        sub = _sublist(eq) if s.random() < P_SUBLIST else None
        call = f"torch.einsum({x}{key}, {sub})" if sub else f"torch.einsum('{eq}', {x}{key})"
        v = self._name("ev")
        self.ev_todo = [("write", v, x), ("read", v, x)]
        return Stmt(f"{v} = {call}", target=v, reads=(x,), view_of=x if view else None)

    def _follow(self) -> Stmt | None:
        step, v, x = self.ev_todo.pop(0)
        if not all(isinstance(self.env.get(n), torch.Tensor) for n in (v, x)):  # (the einsum was dropped)
            self.ev_todo = []
            return None
        s, c = self.ev, self.ev.choice(("2.0", "-0.5", "3.0", "0.25"))
        if step == "write":
            nd = self.env[v].dim()
            code = s.choice((f"{v}.mul_({c})", f"{v}.zero_()", f"{v}.sub_({v})", f"{v}.add_({c})")
                            + ((f"{v}[0].add_({c})",) if nd >= 1 and self.env[v].shape[0] > 0 else ()))
            return Stmt(code, reads=(v,), writes=v)
        r, y = self._name("er"), s.choice((x, x, v))
        return Stmt(f"{r} = {s.choice((f'{y} * {c}', f'{y}.sin()', f'{y}.sum(0)' if self.env[y].dim() else f'{y} + 1'))}",
                    target=r, reads=(y,))


def finish(p: Program) -> Program:
    """``p`` returning every ``er<n>`` it holds, and without gradients every ``ev<n>`` (module Note); ``p`` itself
    where it holds none. (With gradients a returned diagonal view is refused, by design: Thunder's autodiff returns
    a copy; returning it would refuse most programs of the form before their writes through it were checked.)"""
    grad = out_spellings.GRAD.get()
    names = [m.group(1) for s in p.stmts if (m := _NAME.match(s.code)) and not (grad and m.group(1).startswith("ev"))]
    more = tuple(n for n in names if n not in p.returns)
    return p.replace(returns=p.returns + more) if more else p
