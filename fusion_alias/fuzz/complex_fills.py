"""A last statement filling a Python complex number into an argument (or a row of it) that may not be complex.

Note [a complex fill value in the fuzzer]
    Session 36 (fusion_alias/complex_fill_values.py, Note [a complex fill value of a real tensor]): no generator
    filled a complex number into a tensor, and a hand probe found ``x.fill_(1j)`` of a float tensor running where
    eager raises, and ``x.masked_fill(m, 1 + 0j)`` returning complex64 where eager keeps ``x``'s dtype. With
    probability ``P_COMPLEX_FILL`` a program of the ``basic`` or ``fresh`` generator (dropout_args.KINDS:
    those whose streams no test pins) gets one more last statement over one of its arguments ``x``::

        t_cfill = x.masked_fill(x != x, (1+0j))      # eager: x's dtype (bool: any number)
        t_cfill = x.fill_((2.5+1j))                  # eager: an error for a float or integer x
        t_cfill = torch.masked_fill(x, x == x, (nan+0j))

    and returns ``t_cfill`` (``x`` too, where it writes). Where eager raises, the jitted program must raise too.
    Drawn from a stream of its own seeded from ``rng``'s state without drawing from it: with ``P_COMPLEX_FILL`` 0
    every program is the one it was.
"""

from __future__ import annotations

import random

from fusion_alias.fuzz.dropout_args import KINDS
from fusion_alias.fuzz.own_stream_forms import drawn_operand
from fusion_alias.fuzz.program import Program, Stmt

P_COMPLEX_FILL = 0.1
NAME = "t_cfill"
_VALUES = ("1j", "(1+0j)", "(2.5+1j)", "complex(float('nan'), 0)", "(-3+0j)", "0j")
_FORMS = (("{x}.masked_fill({x} != {x}, {v})", False), ("{x}.masked_fill({x} == {x}, {v})", False),
          ("torch.masked_fill({x}, {x} == {x}, {v})", False), ("{x}.fill_({v})", True),
          ("{x}.masked_fill_({x} == {x}, {v})", True), ("torch.fill_({x}, {v})", True))


def finish(p: Program, rng: random.Random) -> Program:
    """``p`` with the form's last statement (module Note), or ``p``; ``rng`` is not drawn from."""
    got = drawn_operand(p, rng, "complex fill", P_COMPLEX_FILL, KINDS)
    if got is None:
        return p
    s, x = got
    form, writes = s.choice(_FORMS)
    code = f"{NAME} = " + form.format(x=x, v=s.choice(_VALUES))
    stmt = Stmt(code, target=NAME, reads=(x,), writes=x if writes else None, inplace_result=writes)
    returns = p.returns + (NAME,) + ((x,) if writes and x not in p.returns else ())
    return p.replace(stmts=p.stmts + (stmt,), returns=returns)
