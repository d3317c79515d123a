"""Greedy shrinking of a failing program, keeping its failure status.

Each step tries one smaller program and keeps it when ``check(schedule)``
still reports the same status (for a raise eager does not make: the same
exception type): drop a statement, a return, a later call's aliasing
(variant), an unused hidden tensor, an unused argument (in every variant),
and de-alias an argument of one variant (``expr.clone()``: same values, own
memory, which shows which sharing matters); finally drop unused bases.
"""

from __future__ import annotations

import dataclasses
import re

from fusion_alias.fuzz.oracle import MakeJit, exception_type, run_program
from fusion_alias.fuzz.program import ATTR_HOLDER, Program


def shrink(
    p: Program,
    schedule: str,
    status: str,
    system: str = "fusion_alias",
    unsafe: bool = False,
    make_jit: MakeJit | None = None,
    max_tries: int = 200,
    detail: str | None = None,
) -> tuple[Program, str]:
    """Greedy shrinking: drop statements, returns, later calls and unused inputs one
    at a time while ``check(schedule)`` still reports ``status`` (and, for
    ``jit-raised`` with the original ``detail`` given, the same exception type)."""
    want_type = exception_type(detail) if status == "jit-raised" and detail else None
    detail = ""
    tries = 0

    def still_fails(q: Program) -> str | None:
        nonlocal tries
        tries += 1
        try:
            st, det = run_program(q, schedule, system, unsafe, make_jit)
        except Exception:  # noqa: BLE001
            return None
        if st != status or (want_type is not None and exception_type(det) != want_type):
            return None
        return det

    def attempt(q: Program) -> bool:
        nonlocal p, detail
        if tries >= max_tries:
            return False
        d = still_fails(q)
        if d is None:
            return False
        p, detail = q, d
        return True

    progress = True
    while progress and tries < max_tries:
        progress = False
        for i in reversed(range(len(p.stmts))):
            progress |= attempt(p.replace(stmts=p.stmts[:i] + p.stmts[i + 1 :]))
        for i in reversed(range(len(p.returns))):
            progress |= attempt(p.replace(returns=p.returns[:i] + p.returns[i + 1 :]))
        if p.call_order:  # (gen_aliasing.py, Note [calls that come back to an aliasing]): the default order first
            progress |= attempt(p.replace(call_order=()))
        for i in reversed(range(len(p.variants))):
            progress |= attempt(_without_variant(p, i))
        used = " ".join(s.code for s in p.stmts) + " " + " ".join(p.returns)
        for h in reversed(p.hidden_names):
            if not _uses(used, h):
                progress |= attempt(_drop_hidden(p, h))
        for i in reversed(range(len(p.args))):
            name = p.args[i][0]
            if _uses(used, name) or (name == ATTR_HOLDER and p.hidden):
                continue
            progress |= attempt(_drop_arg(p, i))
        # de-alias an argument of one call (same values, own memory): shows which aliasing matters
        for v in reversed(range(len(p.all_variants))):
            args = p.all_variants[v].args
            for i in reversed(range(len(args))):
                name, expr = args[i]
                if expr.endswith(".clone()") or name == ATTR_HOLDER:
                    continue
                progress |= attempt(_with_args(p, v, args[:i] + ((name, f"{expr}.clone()"),) + args[i + 1 :]))
    # drop bases no argument or hidden tensor refers to
    exprs = [e for v in p.all_variants for _, e in v.args + v.hidden]
    kept = tuple(b for b in p.bases if any(_uses(e, b[0]) for e in exprs))
    if kept != p.bases:
        # the seeded values change when a base is dropped; keep it only if it still fails
        attempt(p.replace(bases=kept, dtypes=tuple(d for d in p.dtypes if d[0] in dict(kept))))
    return p, detail


def _with_args(p: Program, variant: int, args: tuple) -> Program:
    if variant == 0:
        return p.replace(args=args)
    vs = list(p.variants)
    vs[variant - 1] = dataclasses.replace(vs[variant - 1], args=args)
    return p.replace(variants=tuple(vs))


def _drop_arg(p: Program, i: int) -> Program:
    """``p`` without argument ``i``, in every call."""
    return p.replace(
        args=p.args[:i] + p.args[i + 1 :],
        variants=tuple(dataclasses.replace(v, args=v.args[:i] + v.args[i + 1 :]) for v in p.variants),
    )


def _drop_hidden(p: Program, h: str) -> Program:
    """``p`` without hidden tensor ``h``, in every call (and out of the attribute holder)."""

    def args_without(args: tuple) -> tuple:
        out = []
        for name, expr in args:
            if name == ATTR_HOLDER:
                attrs = [a for a in re.findall(r"(\w+)=\w+", expr) if a != h]
                if not attrs:
                    continue
                expr = f"Box({', '.join(f'{a}={a}' for a in attrs)})"
            out.append((name, expr))
        return tuple(out)

    return p.replace(
        args=args_without(p.args),
        hidden=tuple(x for x in p.hidden if x[0] != h),
        variants=tuple(dataclasses.replace(v, args=args_without(v.args), hidden=tuple(x for x in v.hidden if x[0] != h))
                       for v in p.variants),
    )


def _uses(text: str, name: str) -> bool:
    return re.search(rf"\b{re.escape(name)}\b", text) is not None


def _without_variant(p, i: int):
    """``p`` without its later variant ``i`` (variant ``i + 1`` of ``all_variants``), its call order renumbered."""
    gone = i + 1
    order = tuple(v - (v > gone) for v in p.call_order if v != gone)
    return p.replace(variants=p.variants[:i] + p.variants[i + 1 :], call_order=order)
