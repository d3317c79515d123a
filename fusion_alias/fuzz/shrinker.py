"""Greedy shrinking of a failing program, keeping its failure status."""

from __future__ import annotations

import re

from fusion_alias.fuzz.oracle import MakeJit, run_program
from fusion_alias.fuzz.program import Program


def shrink(
    p: Program,
    schedule: str,
    status: str,
    system: str = "fusion_alias",
    unsafe: bool = False,
    make_jit: MakeJit | None = None,
    max_tries: int = 200,
) -> tuple[Program, str]:
    """Greedy shrinking: drop statements, returns and unused inputs one at a
    time while ``check(schedule)`` still reports ``status``."""
    detail = ""
    tries = 0

    def still_fails(q: Program) -> str | None:
        nonlocal tries
        tries += 1
        try:
            st, det = run_program(q, schedule, system, unsafe, make_jit)
        except Exception:  # noqa: BLE001
            return None
        return det if st == status else None

    progress = True
    while progress and tries < max_tries:
        progress = False
        for i in reversed(range(len(p.stmts))):
            q = p.replace(stmts=p.stmts[:i] + p.stmts[i + 1 :])
            d = still_fails(q)
            if d is not None:
                p, detail, progress = q, d, True
        for i in reversed(range(len(p.returns))):
            q = p.replace(returns=p.returns[:i] + p.returns[i + 1 :])
            d = still_fails(q)
            if d is not None:
                p, detail, progress = q, d, True
        used = " ".join(s.code for s in p.stmts) + " " + " ".join(p.returns)
        for i in reversed(range(len(p.args))):
            name = p.args[i][0]
            if _uses(used, name):
                continue
            q = p.replace(args=p.args[:i] + p.args[i + 1 :])
            d = still_fails(q)
            if d is not None:
                p, detail, progress = q, d, True
        # de-alias an argument (same values, own memory): shows which aliasing matters
        for i in reversed(range(len(p.args))):
            name, expr = p.args[i]
            if expr.endswith(".clone()"):
                continue
            q = p.replace(args=p.args[:i] + ((name, f"{expr}.clone()"),) + p.args[i + 1 :])
            d = still_fails(q)
            if d is not None:
                p, detail, progress = q, d, True
    # drop bases no argument refers to
    kept = tuple(b for b in p.bases if any(_uses(e, b[0]) for _, e in p.args))
    if kept != p.bases:
        q = p.replace(bases=kept)
        # the seeded values change when a base is dropped; keep it only if it still fails
        d = still_fails(q)
        if d is not None:
            p, detail = q, d
    return p, detail


def _uses(text: str, name: str) -> bool:
    return re.search(rf"\b{re.escape(name)}\b", text) is not None
