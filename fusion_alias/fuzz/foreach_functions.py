"""Out-of-place foreach functions in the ``basic``, ``hidden`` and ``calls`` generators: ``torch._foreach_add(xs, ys,
alpha=w)``, ``torch._foreach_mul(xs, s)``..., their results read or written back later, as torch.optim's foreach steps
do.

Note [out-of-place foreach functions in the fuzzer]
    Session 44's hand probes found ``torch._foreach_add(grads, params, alpha=weight_decay)`` and ``torch._foreach_mul``
    (torch.optim's foreach Adam, AdamW and SGD with weight decay) failing while tracing ("add(): argument 'input'
    (position 1) must be Tensor, not TensorProxy": inplace_lookasides.py, Note [a method sent to torch, called outside
    the interpreter]). The generators wrote only the in-place ``torch._foreach_*_`` (gen_basic.py's ``_foreach``), so no
    fuzz run could find it. Here, with probability ``P_FOREACH_FN`` a statement of a program of ``KINDS`` is instead an
    out-of-place foreach function over a list of two or three float32 tensors (aliases of each other as often as the
    program's variables are)::

        t4, t5 = torch._foreach_add([a, t1], [b, a], alpha=0.01)   # weight decay: grads + wd * params
        t4, t5 = torch._foreach_mul([a, t1], 0.9)                  # (also _foreach_add(xs, number), _foreach_sub,
        t4, t5 = torch._foreach_mul([a, t1], [t2, b])               #  _foreach_lerp, _foreach_addcmul)

    (each operand broadcasts into its list entry, so each result has its entry's shape), or, with probability
    ``P_UNARY`` (a stream of its own), a unary one over the list (``torch._foreach_exp([a, t1])``: eager's one node
    keeps each position's save, its result or its input, for the backward of every result). Its results are later
    variables of the program (read, written, returned like any other), and with probability ``P_WRITE_BACK`` the next
    statement writes them back into the list, or into other tensors of their shapes, in place::

        torch._foreach_add_([a, t1], [t4, t5], alpha=-0.1)          # SGD's parameter update
        torch._foreach_lerp_([t2, b], [t4, t5], 0.1)                # Adam's first moment
        torch._foreach_addcmul_([t2, b], [t4, t5], [t4, t5], value=0.01)

    A write-back reads only fresh results and the tensors it writes, so each position is defined in every call's
    aliasing (eager runs one position after the other). Drawn from a stream of its own seeded from ``rng``'s state
    without drawing from it (``ForeachFnGen.fe``): with ``P_FOREACH_FN`` 0 every program is the one it was (the pinned
    streams of tests/test_session3*.py set it to 0).
"""

from __future__ import annotations

import random

import torch

from fusion_alias.fuzz import source
from fusion_alias.fuzz.gen_basic import _Gen, _broadcasts_into
from fusion_alias.fuzz.hazard import _has_internal_overlap, _overlaps
from fusion_alias.fuzz.own_stream_forms import own_stream
from fusion_alias.fuzz.program import Stmt

P_FOREACH_FN = 0.1  # of a statement of a program of KINDS (tests set it to 0: the streams before session 45)
P_WRITE_BACK = 0.7  # the next statement writes the results back (torch.optim's update)
P_UNARY = 0.25  # a unary function over the list instead (its own stream): one node saving each position's save
_UNARY = ("exp", "sigmoid", "sin", "abs", "neg", "sqrt", "tanh")
KINDS = ("basic", "hidden", "calls")
_WEIGHTS = (0.01, 0.1, -0.5, 0.9, 2.0)


class ForeachFnGen(_Gen):
    """The basic generator's statements, some of them out-of-place foreach functions (module Note)."""

    def __init__(self, rng: random.Random, env: dict, names: list[str]):
        super().__init__(rng, env, names)
        self.fe = own_stream(rng, "foreach functions")
        self.unary = own_stream(rng, "foreach unary functions")  # (session 45, after the first runs)
        self.pending: list[str] = []  # results after the first, named once their statement ran
        self.last: tuple[list[str], list[str]] | None = None  # (list, results) of the last foreach function

    def statement(self) -> Stmt:
        last = self._named()
        if P_FOREACH_FN > 0:
            if last is not None and self.fe.random() < P_WRITE_BACK:
                return self._write_back(*last)
            if self.fe.random() < P_FOREACH_FN and (s := self._function()) is not None:
                return s
        return super().statement()

    def _named(self) -> tuple[list[str], list[str]] | None:
        """Name the results of the last foreach function that ran; its (list, results), or None."""
        last, self.last = self.last, None
        if last is None or not all(isinstance(self.env.get(r), torch.Tensor) for r in last[1]):
            self.pending = []
            return None
        self.names += [r for r in self.pending if r not in self.names]
        self.pending = []
        return last

    def _floats(self) -> list[str]:
        return [v for v in self.names if isinstance(self.env.get(v), torch.Tensor) and self.env[v].dtype == torch.float32]

    def _operand(self, x: str, pool: list[str]) -> str:
        """A variable that broadcasts into ``x``, an alias of ``x`` half the time where one exists, else ``x``."""
        fits = [v for v in pool if _broadcasts_into(tuple(self.env[v].shape), tuple(self.env[x].shape))]
        aliased = [v for v in fits if v != x and _overlaps(self.env[v], self.env[x])]
        if aliased and self.fe.random() < 0.5:
            return self.fe.choice(aliased)
        return self.fe.choice(fits) if fits else x

    def _function(self) -> Stmt | None:
        s, pool = self.fe, self._floats()
        if not pool:
            return None
        xs = [s.choice(pool) for _ in range(s.choice((2, 2, 3)))]
        ys = [self._operand(x, pool) for x in xs]
        lst, yl = f"[{', '.join(xs)}]", f"[{', '.join(ys)}]"
        w = s.choice(_WEIGHTS)
        code = s.choice((f"torch._foreach_add({lst}, {yl}, alpha={w})", f"torch._foreach_mul({lst}, {w})",
                         f"torch._foreach_add({lst}, {w})", f"torch._foreach_mul({lst}, {yl})",
                         f"torch._foreach_sub({lst}, {yl}, alpha={w})", f"torch._foreach_lerp({lst}, {yl}, {w})",
                         f"torch._foreach_addcmul({lst}, {yl}, {yl}, value={w})",
                         f"torch._foreach_add({lst}, {yl}, alpha={source.constant(s, self.special)})"))
        if self.unary.random() < P_UNARY:  # (drawn after every draw of ``fe``: the binary forms stay the ones they were)
            code = f"torch._foreach_{self.unary.choice(_UNARY)}({lst})"
        results = [self.fresh() for _ in xs]
        self.pending, self.last = results[1:], (xs, results)
        reads = tuple(dict.fromkeys(xs + ys)) if yl in code else tuple(dict.fromkeys(xs))
        return Stmt(f"{', '.join(results)} = {code}", target=results[0], reads=reads)

    def _write_back(self, xs: list[str], results: list[str]) -> Stmt:
        """The results written, in place, into the list they came from or into other tensors of their shapes."""
        s = self.fe
        dsts = []
        for x, r in zip(xs, results):
            shaped = [v for v in self._floats() if v not in results and self.env[v].shape == self.env[r].shape
                      and not _has_internal_overlap(self.env[v])]
            dsts.append(x if x in shaped and s.random() < 0.6 else s.choice(shaped) if shaped else x)
        lst, rl = f"[{', '.join(dsts)}]", f"[{', '.join(results)}]"
        w = s.choice(_WEIGHTS)
        code = s.choice((f"torch._foreach_add_({lst}, {rl}, alpha={-w})", f"torch._foreach_lerp_({lst}, {rl}, {w})",
                         f"torch._foreach_addcmul_({lst}, {rl}, {rl}, value={w})", f"torch._foreach_sub_({lst}, {rl})",
                         f"torch._foreach_mul_({lst}, {rl})", f"torch._foreach_copy_({lst}, {rl})"))
        # (``reads``: the first destination and the results; a later position reads only what it writes, after the
        # positions before it: defined where the destinations overlap)
        return Stmt(code, reads=tuple(dict.fromkeys([dsts[0]] + results)), writes=dsts[0])
