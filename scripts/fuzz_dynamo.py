"""The fuzzer through ``torch.compile``: each program compiled with ``fusion_alias.dynamo_backend``.

    PYTHONPATH=. python scripts/fuzz_dynamo.py --programs 30 --seed 20731 [--generator G ...] [--grad]
        [--time-budget SEC] [--max-failures N] [--schedule S|all] [--only INDEX ...]
    PYTHONPATH=. python scripts/fuzz_dynamo.py --seed 20731 --only 7 --compare      # attribute a failure
    PYTHONPATH=. python scripts/fuzz_dynamo.py --seed 20731 --only 7 --repro eager   # a script for one backend

Each program (``fusion_alias.fuzz``'s generators, eager's result the oracle) runs as
``torch.compile(prog, backend=fusion_alias.dynamo_backend(backend="reference", schedule=S))``, Dynamo
reset before each program (``make_dynamo_jit``). ``--compare`` reruns the chosen programs (``--only``, or
the failing ones) with Dynamo's own ``backend="eager"`` and ``"aot_eager"`` and with plain Thunder's
``thunder.dynamo.ThunderCompiler``: a failure that those share is Dynamo's (or AOT autograd's, or
Thunder's), not fusion_alias's. ``--repro BACKEND`` prints a self-contained script of each chosen program
through that backend (exit 1 on a failure).

Note [fuzz programs are exec'd source, Dynamo wants their module]
    A fuzz program is exec'd source (``oracle._load``): its functions' ``__module__`` names a module that
    is not in ``sys.modules``, and Dynamo looks the module up there (inlining the program's helpers,
    guarding the globals it reads). ``make_dynamo_jit`` registers a ``types.ModuleType`` under that name,
    filled from the function's ``__globals__`` before each program (every program uses the same name).
    Dynamo reads the program's globals from that module, not from ``fn.__globals__``. A copy made once
    (session 18's script) went stale: the driver rebinds a ``hidden`` global before each call
    (``install_hidden``), eager's tensor first, so the compiled call read and wrote eager's tensor. Each call
    of the compiled function refreshes the copy first. Session 18's ``hidden`` mismatches, attributed to
    Dynamo because ``backend="eager"`` had them too, were this copy (docs/testing.md, session 19).
"""

from __future__ import annotations

import argparse
import logging
import sys
import types
from typing import Callable, Sequence

import torch

from fusion_alias.fuzz.driver import FuzzReport, run_fuzz
from fusion_alias.fuzz.generator import generate_program
from fusion_alias.fuzz.oracle import FAILING_STATUSES, SCHEDULES, program_source, run_program
from fusion_alias.fuzz.program import GENERATORS

# what ``--compare`` and ``--repro`` accept besides ``fusion_alias``
BACKENDS = ("fusion_alias", "eager", "aot_eager", "thunder")
# the generators the campaign draws from by default (``modules`` and ``train`` are left to the CLI)
DEFAULT_GENERATORS = ("basic", "dtype", "layout", "fresh", "edges", "strided", "order", "calls", "hidden")


def _register_module(fn: Callable) -> None:
    """Note [fuzz programs are exec'd source, Dynamo wants their module]."""
    name = getattr(fn, "__module__", None)
    if not name or not hasattr(fn, "__globals__"):
        return
    module = sys.modules.get(name)
    if module is None:
        module = sys.modules[name] = types.ModuleType(name)
    elif not getattr(module, "__fuzz_dynamo__", False):
        return  # a real module: leave it alone
    module.__dict__.clear()  # the previous program's names
    module.__dict__.update(fn.__globals__)
    module.__fuzz_dynamo__ = True


def _backend(which: str, schedule: str):
    if which == "fusion_alias":
        import fusion_alias

        return fusion_alias.dynamo_backend(backend="reference", schedule=schedule)
    if which == "thunder":
        from thunder.dynamo import ThunderCompiler

        return ThunderCompiler()
    if which in ("eager", "aot_eager"):
        return which
    raise ValueError(f"unknown backend {which!r}; one of {BACKENDS}")


def make_dynamo_jit(which: str = "fusion_alias") -> Callable[[Callable, str], Callable]:
    """``make_jit(fn, schedule)`` for ``run_fuzz``: a fresh Dynamo, ``torch.compile(fn, backend=...)``."""

    def make_jit(fn, schedule):
        torch._dynamo.reset()
        compiled = torch.compile(fn, backend=_backend(which, schedule))

        def call(*args, **kwargs):
            _register_module(fn)  # the globals as the program rebinds them between calls: the Note
            return compiled(*args, **kwargs)

        return call

    return make_jit


def run_dynamo_fuzz(
    programs: int = 30,
    seed: int = 0,
    generators: Sequence[str] = DEFAULT_GENERATORS,
    grad: bool = False,
    schedules: Sequence[str] = ("reads-first",),
    time_budget: float | None = None,
    max_failures: int | None = 20,
    only: Sequence[int] | None = None,
    backend: str = "fusion_alias",
    log: Callable[[str], None] | None = None,
) -> FuzzReport:
    """``run_fuzz`` with every program compiled by ``torch.compile`` (``make_dynamo_jit(backend)``); no shrinking."""
    return run_fuzz(programs=programs, seed=seed, schedules=tuple(schedules), time_budget=time_budget,
                    make_jit=make_dynamo_jit(backend), do_shrink=False, stop_after_failures=max_failures,
                    only=only, log=log, grad=grad, generators=tuple(generators))


def compare_backends(seed: int, index: int, generators: Sequence[str], grad: bool, schedule: str,
                     backends: Sequence[str] = BACKENDS) -> dict[str, tuple[str, str]]:
    """(status, detail) of program ``index`` under each backend: which of them share a failure."""
    p = generate_program(seed, index, generators=tuple(generators), grad=grad)
    if grad:
        p = p.replace(grad=True)
    out = {}
    for which in backends:
        try:
            out[which] = run_program(p, schedule, "eager", False, make_dynamo_jit(which))
        except Exception as e:  # noqa: BLE001 - harness error
            out[which] = ("harness-error", repr(e))
    return out


def repro_source(seed: int, index: int, generators: Sequence[str], grad: bool, schedule: str,
                 backend: str = "fusion_alias") -> str:
    """A self-contained script of program ``index`` compiled through ``backend`` (exit 1 on a failure)."""
    p = generate_program(seed, index, generators=tuple(generators), grad=grad)
    if grad:
        p = p.replace(grad=True)
    jit = (f"    return torch.compile(fn, backend=fusion_alias.dynamo_backend(backend='reference', schedule=schedule))\n"
           if backend == "fusion_alias" else
           "    from thunder.dynamo import ThunderCompiler\n    return torch.compile(fn, backend=ThunderCompiler())\n"
           if backend == "thunder" else f"    return torch.compile(fn, backend={backend!r})\n")
    return (f"# fusion_alias fuzz repro through torch.compile: seed {seed} program {p.name} ({p.kind}), "
            f"backend {backend}\nimport fusion_alias\n"
            + program_source(p, "eager")
            + "\n\ndef make_jit(fn, schedule):  # (replaces the one above)\n    torch._dynamo.reset()\n" + jit
            + f"\n\nif __name__ == \"__main__\":\n    status, detail = check({schedule!r}, make_jit)\n"
            + "    print(status, detail)\n"
            + f"    raise SystemExit(1 if status in {FAILING_STATUSES!r} else 0)\n")


def _summary(report: FuzzReport) -> str:
    return (f"dynamo fuzz: programs={report.programs} runs={report.runs} seconds={report.seconds:.0f} "
            f"mismatches={len(report.mismatches)} missed-rejections={len(report.missed_rejections)} "
            f"unexpected-errors={len(report.errors)} refused={len(report.unsupported)} "
            f"both-raised={report.both_raised}")


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="scripts/fuzz_dynamo.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("--programs", type=int, default=30)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--generator", action="append", choices=GENERATORS, metavar="NAME",
                    help=f"repeatable; default {', '.join(DEFAULT_GENERATORS)}")
    ap.add_argument("--grad", action="store_true", help="inputs from leaves that require grad; compare gradients")
    ap.add_argument("--schedule", choices=(*SCHEDULES, "all"), default="reads-first")
    ap.add_argument("--time-budget", type=float, default=None, metavar="SEC")
    ap.add_argument("--max-failures", type=int, default=20)
    ap.add_argument("--only", type=int, action="append", metavar="INDEX")
    ap.add_argument("--compare", action="store_true",
                    help="rerun the --only programs (or the failing ones) with eager, aot_eager and ThunderCompiler")
    ap.add_argument("--repro", choices=BACKENDS, metavar="BACKEND", help="print a script of each --only program")
    ap.add_argument("--verbose", action="store_true", help="print each failure's program and detail")
    ns = ap.parse_args(argv)
    logging.getLogger("torch._subclasses.fake_tensor").setLevel(logging.CRITICAL)  # eager's rejections, traced
    generators = tuple(ns.generator) if ns.generator else DEFAULT_GENERATORS
    schedules = SCHEDULES if ns.schedule == "all" else (ns.schedule,)
    if ns.repro:
        for index in ns.only or ():
            print(repro_source(ns.seed, index, generators, ns.grad, schedules[0], ns.repro))
        return 0
    indices = ns.only
    failed = 0
    if not (ns.compare and ns.only):
        report = run_dynamo_fuzz(ns.programs, ns.seed, generators, ns.grad, schedules, ns.time_budget,
                                 ns.max_failures, ns.only, log=lambda s: print(s, flush=True))
        for name, sched, msg in report.unsupported:
            print(f"refused: {name} [{sched}]: {msg}")
        for f in report.failures:
            print(f"{f.status}: program {f.program.name} [{f.program.kind}] [{f.schedule}]: "
                  + f.detail.strip().splitlines()[-1][:300])
            if ns.verbose:
                print(f.detail)
        print(report.summary())
        print(_summary(report), flush=True)
        failed = len(report.failures)
        indices = [int(f.program.name.rsplit("#", 1)[-1]) for f in report.failures]
    if ns.compare:
        for index in indices or ():
            for which, (status, detail) in compare_backends(ns.seed, index, generators, ns.grad,
                                                            schedules[0]).items():
                last = detail.strip().splitlines()[-1][:200] if detail.strip() else ""
                print(f"#{index} {which}: {status} {last}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
