"""What the ``modules`` generator's forms drawn from a stream of their own share (modules_hooks.py,
modules_process.py): the stream, and the operands a forward statement of theirs reads."""

from __future__ import annotations

import random


class OwnStreamForm:
    """A form of one program, drawing from ``s`` (seeded from the program's ``rng`` state without drawing from
    it: with the form's probability 0 every program is the one it was)."""

    def __init__(self, s: random.Random):
        self.s = s

    def operands(self, body) -> tuple[str, str]:
        """A batch value and a vector (or the call's ``k``) of the program (``body``: ``gen_modules._Body``)."""
        s = self.s
        return s.choice(body.batch_vals), s.choice(body.mod.vecs() + ["k"])
