"""What the ``modules`` generator's forms drawn from a stream of their own share (modules_hooks.py,
modules_process.py, modules_code.py, modules_values.py, modules_hook_dicts.py): the stream, the lines they add to
the program, and how they draw a forward statement, the operands it reads and the statements that change them
between calls (modules_outside.py asks)."""

from __future__ import annotations

import random

from fusion_alias.fuzz.program import ATTR_HOLDER, Program, Stmt


class OwnStreamForm:
    """A form of one program, drawing from ``s`` (seeded from the program's ``rng`` state without drawing from
    it: with the form's probability 0 every program is the one it was)."""

    P_STMT = 0.0  # a forward statement of the form, where a program holds it (each form's own)
    REBINDS: tuple[str, ...] = ()  # the statements that change the form between calls (each form's own)
    REBIND_COUNTS = (0, 1, 1, 2)  # how many of them before a later call, drawn
    PRELUDE: list[str] = []  # the program's lines before ``Net`` (each form's own)
    INIT: tuple[str, ...] = ()  # the lines ending ``Net.__init__`` (each form's own)

    def __init__(self, s: random.Random):
        self.s = s

    def prelude(self) -> list[str]:
        """The program's lines the form needs before ``Net``."""
        return self.PRELUDE

    def wants(self) -> bool:
        """Whether the next forward statement is the form's."""
        return self.s.random() < self.P_STMT

    def assigned(self, body, exprs: list[str]) -> tuple[Stmt, str]:
        """A forward statement assigning one of ``exprs`` to a new value of ``body``, and that value."""
        t = body.tmp()
        return Stmt(f"{t} = {self.s.choice(exprs)}", target=t), t

    def rebinds(self) -> tuple[str, ...]:
        """Statements changing the form before a later call (drawn from ``REBINDS``; maybe none)."""
        s = self.s
        return tuple(s.choice(self.REBINDS) for _ in range(s.choice(self.REBIND_COUNTS)))

    def operands(self, body) -> tuple[str, str]:
        """A batch value and a vector (or the call's ``k``) of the program (``body``: ``gen_modules._Body``)."""
        s = self.s
        return s.choice(body.batch_vals), s.choice(body.mod.vecs() + ["k"])


def own_stream(rng: random.Random, label: str) -> random.Random:
    """A generator of its own for ``label``, seeded from ``rng``'s state without drawing from it: what is drawn from
    it leaves every other draw of the program as it was."""
    return random.Random(str(rng.getstate()[1][:16]) + ":" + label)


def redrawn(rng: random.Random, kind: str, label: str, parents, p: float, kinds) -> str:
    """``kind``, or one of ``kinds`` in its place where ``kind`` is among ``parents``, drawn with probability ``p``
    from ``own_stream(rng, label)`` (the hidden generator's number forms: with ``p`` 0, every program is the one it was)."""
    s = own_stream(rng, label)
    if kind in parents and p > 0 and s.random() < p:
        return s.choice(tuple(kinds))
    return kind


def drawn(form, rng: random.Random, label: str, p: float):
    """``form(s)`` of ``s = own_stream(rng, label)`` where the form is drawn (probability ``p``), else None."""
    s = own_stream(rng, label)
    return form(s) if p > 0 and s.random() < p else None


def drawn_operand(p: Program, rng: random.Random, label: str, prob: float, kinds) -> tuple[random.Random, str] | None:
    """``(s, x)`` for a last statement of ``p`` drawn from ``s = own_stream(rng, label)`` with probability ``prob``, in
    programs of ``kinds`` that have a tensor parameter ``x`` (drawn from ``s``); None otherwise (the ``basic``/``fresh``
    forms: dropout_args.py, complex_fills.py, max_dims.py)."""
    s = own_stream(rng, label)
    tensors = [a for a in p.params if a != ATTR_HOLDER]
    if p.kind not in kinds or prob <= 0 or s.random() >= prob or not tensors:
        return None
    return s, s.choice(tensors)
