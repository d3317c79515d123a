"""In-place ops whose backward saves their result or their tensor operand, then (most often) a write into that.

Note [in-place ops that save their result or operand, in the fuzzer]
    Session 46 (refusals/saved_versions.py): ``F.celu(y, inplace=True)``, ``F.selu(y, inplace=True)``,
    ``F.rrelu_(y, training=False)``, ``y.sgn_()``, ``y.copysign_(-1.0)``, ``y.expm1_()`` (and ``exp_``, ``tanh_``,
    ``sigmoid_``) save their result for the backward; ``y.fmod_(z)``, ``remainder_``, ``xlogy_``, ``true_divide_``,
    ``clamp_min_``/``clamp_max_``/``clip_`` with a tensor, ``atan2_``/``arctan2_`` save their tensor operand ``z``.
    A later write into the saved tensor (or into memory it shares) makes eager raise at backward ("modified by an
    inplace operation"), and fusion_alias returned a gradient for those its table lacked. The basic generator drew
    none of the first kind but ``exp_``/``tanh_``/``sigmoid_``, and none of the second. Here, with probability
    ``P_SAVING_INPLACE`` a statement of a program of ``KINDS`` is one such op over a float tensor ``y``, bound as
    ``sv<n>`` (the result, ``y`` itself), and with probability ``P_WRITE`` a later statement writes into what it saved
    (``y``, an alias of it, or the operand ``z``); the others leave it unwritten, where both sides must agree::

        sv0 = torch.nn.functional.celu(a, inplace=True)
        t3 = b.sin()                                  # (the generator's statements, maybe)
        sv0.mul_(0.5)                                 # then: eager raises at backward; fusion_alias must refuse

        sp1 = t2.abs() + 0.5                          # a positive operand for fmod_, remainder_, xlogy_, true_divide_
        sv2 = a.fmod_(sp1)
        sp1.add_(1.0)                                 # the saved operand written

    The operand of ``clamp_min_``, ``clip_``, ``atan2_``... is any float variable that broadcasts into ``y`` (an alias
    of it as often as one exists). The finished program (``finish``) returns each ``sv<n>``, so with gradients the
    loss reaches the op's node, and is tagged ``strict_backward``: an eager error at backward counts as a rejection
    the jitted call must make too (disjoint_views.py, Note [disjoint views of one base, after independent tensors]),
    so a gradient where eager raises is a ``missed-rejection``. Its own gate and not ``--saving-ops``' (saving_ops.py,
    off by default): this class is a refusal every ``--grad`` run should keep checking, and its statements are
    sequences (an operand, the op, a later write) with a tag and returns, not one expression respelled. Drawn from a
    stream of its own seeded from ``rng``'s state without drawing from it (``SavingInplaceGen.si``): with
    ``P_SAVING_INPLACE`` 0 every program is the one it was (tests/test_fuzz.py sets it to 0).
"""

from __future__ import annotations

import random
import re

import torch

from fusion_alias.fuzz.einsum_view_forms import EinsumViewGen
from fusion_alias.fuzz.gen_basic import _broadcasts_into
from fusion_alias.fuzz.hazard import _overlaps
from fusion_alias.fuzz.own_stream_forms import own_stream
from fusion_alias.fuzz.program import Program, Stmt

P_SAVING_INPLACE = 0.06  # of a statement of a program of KINDS (tests set it to 0: the streams before session 46)
P_WRITE = 0.75  # a later statement writes into what the op saved
P_FOLLOW = 0.5  # a statement is the pending write (else the generator's own, before it)
KINDS = ("basic", "hidden", "calls")
TAG = ("strict_backward", "saving in-place")
_RESULT_SAVERS = ("torch.nn.functional.celu({y}, inplace=True)", "torch.nn.functional.selu({y}, inplace=True)",
                  "torch.nn.functional.rrelu_({y}, training=False)", "{y}.sgn_()", "{y}.copysign_(-1.0)",
                  "{y}.expm1_()", "{y}.exp_()", "{y}.tanh_()", "{y}.sigmoid_()")
_POSITIVE_OPERAND = ("{y}.fmod_({z})", "{y}.remainder_({z})", "{y}.xlogy_({z})", "{y}.true_divide_({z})")
_ANY_OPERAND = ("{y}.clamp_min_({z})", "{y}.clamp_max_({z})", "{y}.clip_({z})", "{y}.arctan2_({z})", "{y}.atan2_({z})")
_WRITES = ("{w}.mul_(0.5)", "{w}.add_(1.0)", "{w}.zero_()", "{w}[0].sub_(0.25)")
_SV = re.compile(r"^(sv\d+) = ")


class SavingInplaceGen(EinsumViewGen):
    """The statements of ``EinsumViewGen``, some of them in-place ops that save their result or operand (module
    Note)."""

    def __init__(self, rng: random.Random, env: dict, names: list[str]):
        super().__init__(rng, env, names)
        self.si = own_stream(rng, "saving in-place")
        self.si_count = 0
        self.si_todo: list[tuple] = []  # pending steps: ("op", code template, y, z) / ("write", saved names)

    def statement(self) -> Stmt:
        if P_SAVING_INPLACE > 0:
            if self.si_todo and (self.si_todo[0][0] == "op" or self.si.random() < P_FOLLOW):
                if (s := self._step()) is not None:
                    return s
            elif self.si.random() < P_SAVING_INPLACE and (s := self._start()) is not None:
                return s
        return super().statement()

    def _name(self, prefix: str) -> str:
        self.si_count += 1
        return f"{prefix}{self.si_count - 1}"

    def _saving_floats(self) -> list[str]:
        # (its own name: overriding ForeachFnGen._floats changed the foreach draws of every basic/hidden/calls program)
        return [v for v in self.names if isinstance(self.env.get(v), torch.Tensor)
                and self.env[v].dtype in (torch.float32, torch.float64) and self.env[v].dim() >= 1]

    def _start(self) -> Stmt | None:
        s, pool = self.si, self._saving_floats()
        if not pool:
            return None
        y = s.choice(pool)
        kind = s.choice(("result", "result", "positive", "any"))
        if kind == "result":
            return self._op(s.choice(_RESULT_SAVERS), y, None)
        fits = [v for v in pool if _broadcasts_into(tuple(self.env[v].shape), tuple(self.env[y].shape))]
        if kind == "any":
            aliased = [v for v in fits if _overlaps(self.env[v], self.env[y])]
            z = s.choice(aliased if aliased and s.random() < 0.5 else fits or [y])
            return self._op(s.choice(_ANY_OPERAND), y, z)
        w = s.choice(fits or [y])
        z = self._name("sp")
        self.si_todo = [("op", s.choice(_POSITIVE_OPERAND), y, z)]
        return Stmt(f"{z} = {w}.abs() + 0.5", target=z, reads=(w,))

    def _op(self, template: str, y: str, z: str | None) -> Stmt:
        sv = self._name("sv")
        # a later write into the result (y itself), memory it shares, or the saved operand
        saved = (sv, y) + ((z,) if z is not None else ())
        self.si_todo = [("write", saved, z)] if self.si.random() < P_WRITE else []
        code = template.format(y=y, z=z)
        return Stmt(f"{sv} = {code}", target=sv, reads=(y,) + ((z,) if z is not None and z != y else ()), writes=y,
                    inplace_result=True)

    def _step(self) -> Stmt | None:
        step = self.si_todo.pop(0)
        if step[0] == "op":
            _, template, y, z = step
            return self._op(template, y, z) if all(n in self.env for n in (y, z)) else None
        _, saved, z = step
        if not all(n in self.env for n in saved):  # (the op was dropped)
            return None
        s = self.si
        targets = [z] if z is not None and s.random() < 0.5 else list(saved[:2])
        targets += [v for v in self._saving_floats() if v not in targets and _overlaps(self.env[v], self.env[targets[0]])]
        w = s.choice(targets)
        return Stmt(s.choice(_WRITES).format(w=w), reads=(w,), writes=w)


def finish(p: Program) -> Program:
    """``p`` returning each ``sv<n>`` and tagged ``TAG`` where it holds the form (module Note); else ``p``."""
    names = [m.group(1) for s in p.stmts if (m := _SV.match(s.code))]
    if not names:
        return p
    more = tuple(n for n in names if n not in p.returns)
    return p.replace(returns=p.returns + more, tags=p.tags + ((TAG,) if TAG not in p.tags else ()))
