"""``python -m fusion_alias.fuzz``: the command line."""

from __future__ import annotations

import argparse
import sys
from typing import Sequence

import fusion_alias.fuzz as _package
from fusion_alias.fuzz.driver import run_fuzz
from fusion_alias.fuzz.oracle import SCHEDULES
from fusion_alias.fuzz.program import GENERATORS, SYSTEMS


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m fusion_alias.fuzz", description=_package.__doc__.split("\n\n")[0])
    ap.add_argument("--programs", type=int, default=100, help="number of programs (default 100)")
    ap.add_argument("--seed", type=int, default=0, help="generator seed; same seed, same programs")
    ap.add_argument("--schedule", choices=(*SCHEDULES, "all", "both"), default="all",
                    help="a reference-backend schedule, or all of them (default; 'both' is an old name for all)")
    ap.add_argument("--time-budget", type=float, default=None, metavar="SEC", help="stop starting programs after SEC")
    ap.add_argument("--unsafe-ignore-hazards", action="store_true",
                    help="pass unsafe_ignore_hazards=True to fusion_alias.jit (the fuzzer should then fail)")
    ap.add_argument("--strict", action="store_true",
                    help="also fail on refusals and on raises plain thunder.jit makes too")
    ap.add_argument("--allow-jit-errors", action="store_true",
                    help="an unexpected raise of the jitted call (eager returns) is reported, not a failure")
    ap.add_argument("--generator", action="append", choices=GENERATORS, metavar="NAME",
                    help=f"draw programs from this generator only (repeatable; default all: {', '.join(GENERATORS)})")
    ap.add_argument("--system", choices=SYSTEMS, default="fusion_alias",
                    help="system under test; thunder/thunder-skip/eager are stand-ins for testing the harness")
    ap.add_argument("--max-stmts", type=int, default=8)
    ap.add_argument("--error-rate", type=float, default=0.05,
                    help="probability per eager-rejected candidate statement of keeping it (tests rejections)")
    ap.add_argument("--no-shrink", action="store_true")
    ap.add_argument("--max-failures", type=int, default=5, help="stop after this many failing programs")
    ap.add_argument("--only", type=int, action="append", metavar="INDEX", help="run only program INDEX (repeatable)")
    ap.add_argument("--verbose", action="store_true")
    ap.add_argument("--grad", action="store_true",
                    help="inputs derived from leaves that require grad; compare gradients too")
    ap.add_argument("--nvfuser-stand-in", action="store_true",
                    help="run every region through the nvFuser wrapper over its CPU stand-in "
                         "(backends/nvfuser_stand_in.py): the adapter, casts, deferred write-backs; one schedule")
    ap.add_argument("--write-outputs", action="store_true",
                    help="after each call, write into every output in place and compare again (Note [outputs "
                         "written after the call], oracle.py)")
    ap.add_argument("--special-values", action="store_true",
                    help="put NaN, infinities, signed zeros and integer extremes into a quarter of every "
                         "input's elements (Note [special values in the inputs], source.py)")
    ap.add_argument("--keyword-spellings", action="store_true",
                    help="respell about half the calls of each program with eager's keyword names for operands "
                         "(Note [keyword spellings respell the rendered program], keyword_spellings.py)")
    ap.add_argument("--keyword-calls", action="store_true",
                    help="the k-th call of each program passes its last k arguments by name (Note [arguments "
                         "passed by keyword], oracle.py)")
    ap.add_argument("--saving-ops", action="store_true",
                    help="a quarter of the out-of-place statements of a floating tensor are ops that save it for the "
                         "backward (std, hypot, a / b, ...: Note [ops that save what a later write changes], saving_ops.py)")
    ap.add_argument("--strict-backward", action="store_true",
                    help="an eager error at backward is a rejection the jitted call must make too, not a call "
                         "left uncompared (Note [disjoint views of one base, after independent tensors], "
                         "disjoint_views.py)")
    ns = ap.parse_args(argv)
    if ns.strict_backward:
        from fusion_alias.fuzz import disjoint_views

        disjoint_views.STRICT_BACKWARD = True
    if ns.saving_ops:
        from fusion_alias.fuzz import saving_ops

        saving_ops.P_SAVING = 0.25
    if ns.keyword_calls:
        from fusion_alias.fuzz import oracle

        oracle.KEYWORD_CALLS = True
    if ns.keyword_spellings:
        from fusion_alias.fuzz import keyword_spellings

        keyword_spellings.ENABLED = True
    if ns.special_values:
        from fusion_alias.fuzz import source

        source.SPECIAL_VALUES = True
    if ns.write_outputs:
        from fusion_alias.fuzz import oracle

        oracle.WRITE_OUTPUTS = True
    schedules = SCHEDULES if ns.schedule in ("all", "both") else (ns.schedule,)
    if ns.nvfuser_stand_in:
        from fusion_alias.backends import nvfuser_stand_in

        nvfuser_stand_in.install()
        schedules = ("reads-first",)  # (the stand-in runs reads first whatever the schedule)
    if ns.system == "fusion_alias":
        import fusion_alias

        if not hasattr(fusion_alias, "jit"):
            print("fusion_alias.jit does not exist yet; use --system thunder|thunder-skip|eager", file=sys.stderr)
            return 2
    report = run_fuzz(
        programs=ns.programs,
        seed=ns.seed,
        schedules=schedules,
        time_budget=ns.time_budget,
        unsafe_ignore_hazards=ns.unsafe_ignore_hazards,
        system=ns.system,
        max_stmts=ns.max_stmts,
        error_rate=ns.error_rate,
        do_shrink=not ns.no_shrink,
        stop_after_failures=ns.max_failures,
        only=ns.only,
        verbose=ns.verbose,
        log=lambda s: print(s, flush=True),
        grad=ns.grad,
        generators=tuple(ns.generator) if ns.generator else GENERATORS,
        allow_jit_errors=ns.allow_jit_errors,
    )
    if report.thunder_unsupported:
        print(f"unsupported by Thunder (plain thunder.jit raises the same) on {len(report.thunder_unsupported)} runs:")
        for name, sched, msg in report.thunder_unsupported[:10]:
            print(f"  {name} [{sched}]: {msg}")
    if report.unsupported:
        print(f"refused by fusion_alias on {len(report.unsupported)} runs:")
        for name, sched, msg in report.unsupported[:10]:
            print(f"  {name} [{sched}]: {msg}")
    if report.jit_errors:
        print(f"jit raised unexpected errors on {len(report.jit_errors)} runs:")
        for name, sched, msg in report.jit_errors[:10]:
            print(f"  {name} [{sched}]: {msg}")
    for f in report.failures:
        print(f"{f.status}: program {f.program.name} [{f.schedule}]"
              + (f", shrunk to {len(f.shrunk.stmts)} statements" if f.shrunk else ""))
    print(report.summary())
    return report.exit_code(ns.strict)
