"""A last statement reducing an argument with ``max``/``min`` along a dim that may be out of range.

Note [a max's dim in the fuzzer]
    Session 36 (fusion_alias/min_max.py, Note [a max's dim is checked as eager checks it]): the generators reduce
    along dims they know exist, and a hand probe found ``torch.max(x, 5)`` of a 3-d float ``x`` reducing dim 2 and
    ``torch.max(x, 1.5)`` dim 1, where eager raises. With probability ``P_MAX_DIM`` a program of the ``basic`` or
    ``fresh`` generator (dropout_args.KINDS) gets one more last statement over one of its arguments ``x``::

        t_max = torch.max(x, 5).values        # dims 0, -1 run where x has them; 3, 5, -4 and 1.5 eager may refuse
        t_max = x.min(dim=-4, keepdim=True).indices

    and returns ``t_max``. Drawn from a stream of its own seeded from ``rng``'s state without drawing from it: with
    ``P_MAX_DIM`` 0 every program is the one it was.
"""

from __future__ import annotations

import random

from fusion_alias.fuzz.dropout_args import KINDS
from fusion_alias.fuzz.own_stream_forms import drawn_operand
from fusion_alias.fuzz.program import Program, Stmt

P_MAX_DIM = 0.1
NAME = "t_max"
_DIMS = ("0", "-1", "1", "3", "5", "-4", "1.5")
_FORMS = ("torch.max({x}, {d})", "{x}.max({d})", "torch.min({x}, {d})", "{x}.min(dim={d}, keepdim=True)")


def finish(p: Program, rng: random.Random) -> Program:
    """``p`` with the form's last statement (module Note), or ``p``; ``rng`` is not drawn from."""
    got = drawn_operand(p, rng, "max dim", P_MAX_DIM, KINDS)
    if got is None:
        return p
    s, x = got
    e = s.choice(_FORMS).format(x=x, d=s.choice(_DIMS)) + s.choice((".values", ".indices"))
    return p.replace(stmts=p.stmts + (Stmt(f"{NAME} = {e}", target=NAME, reads=(x,)),), returns=p.returns + (NAME,))
