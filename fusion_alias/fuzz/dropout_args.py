"""A last statement calling a dropout function in place or in evaluation mode, with arguments eager may refuse.

Note [a dropout's arguments in the fuzzer]
    Session 36 (fusion_alias/dropout_checks.py, Note [a dropout's arguments are checked before the shortcut]): no
    generator called a dropout function with ``inplace=True`` or ``training=False``, the calls fusion_alias's
    lookasides answer by returning the input, and a hand probe found them skipping eager's argument checks (a
    probability outside [0, 1], a ``dropout1d`` input that is not 2-D or 3-D): missed rejections. With probability
    ``P_DROPOUT`` a program of the ``basic`` or ``fresh`` generator (``KINDS``: the default mix draws them, and no
    older test pins their streams, by digest or by what a seed's programs give: ``strided`` and ``edges`` programs
    are, tests/test_fuzz.py, tests/test_fuzz_edges.py) gets one more last statement over one of its arguments
    ``x``::

        t_drop = torch.nn.functional.dropout2d(x, 1.5, training=False, inplace=True)   # eager: ValueError
        t_drop = torch.nn.functional.dropout1d(x.reshape(-1), 0.0, inplace=True)      # eager: RuntimeError
        t_drop = torch.nn.functional.alpha_dropout(x, 0.3, training=False, inplace=True)  # runs: x itself

    (a probability of -0.5 or 1.5, or one of 0, 0.3, 1 with ``training=False`` or 0 with ``training=True``, where
    eager returns ``x`` untouched; ``dropout1d`` of ``x`` runs or raises by ``x``'s rank), and returns ``t_drop``.
    With probability ``P_RRELU`` the statement is instead ``F.rrelu(x, lower, upper, training=False, ...)`` (Note
    [rrelu's arguments, checked as eager checks them]: ``lower > upper``, or an integer ``x``, eager refuses).
    Where eager raises, the jitted program must raise too (the oracle's rule for a program eager rejects). Drawn from
    a stream of its own seeded from ``rng``'s state without drawing from it: with ``P_DROPOUT`` 0 every program is
    the one it was (older tests pin that).
"""

from __future__ import annotations

import random

from fusion_alias.fuzz.own_stream_forms import drawn_operand
from fusion_alias.fuzz.program import Program, Stmt

P_DROPOUT = 0.1
KINDS = ("basic", "fresh")
NAME = "t_drop"
_FUNCTIONS = ("dropout", "alpha_dropout", "feature_alpha_dropout", "dropout1d", "dropout2d", "dropout3d")
_BAD = ("-0.5", "1.5")
_RUNS = (("0.0", "False"), ("0.3", "False"), ("1.0", "False"), ("0.0", "True"))
P_RRELU = 0.25  # of the form's statements: an evaluation-mode rrelu instead (lower > upper: eager refuses)
_RRELU_BOUNDS = (("0.5", "0.1"), ("0.1", "0.3"), ("0.2", "0.2"))


def statement(s: random.Random, x: str) -> str:
    """The form's statement over argument ``x`` (module Note)."""
    fn = s.choice(_FUNCTIONS)
    if s.random() < 0.5:  # a probability eager refuses, whatever training and inplace are
        p, training, inplace = s.choice(_BAD), s.choice(("False", "True")), s.choice(("False", "True"))
    else:
        (p, training), inplace = s.choice(_RUNS), "True"
    if fn == "dropout1d" and s.random() < 0.3:  # a rank eager refuses (1-D)
        x = f"{x}.reshape(-1)"
    if s.random() < P_RRELU:  # (drawn last: the dropout statements are the ones they were)
        lower, upper = s.choice(_RRELU_BOUNDS)
        return f"{NAME} = torch.nn.functional.rrelu({x}, {lower}, {upper}, training=False, inplace={inplace})"
    return f"{NAME} = torch.nn.functional.{fn}({x}, {p}, training={training}, inplace={inplace})"


def finish(p: Program, rng: random.Random) -> Program:
    """``p`` with the form's last statement (module Note), or ``p``; ``rng`` is not drawn from."""
    got = drawn_operand(p, rng, "dropout args", P_DROPOUT, KINDS)
    if got is None:
        return p
    s, x = got
    stmt = Stmt(statement(s, x), target=NAME, reads=(x,))
    return p.replace(stmts=p.stmts + (stmt,), returns=p.returns + (NAME,))
