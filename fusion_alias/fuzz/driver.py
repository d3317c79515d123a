"""The fuzz loop and its report: generate, check every schedule, classify,
shrink the failures."""

from __future__ import annotations

import dataclasses
import time
import traceback
from typing import Callable, Sequence

from fusion_alias.fuzz.generator import generate_program
from fusion_alias.fuzz.hazard import has_alias_hazard
from fusion_alias.fuzz.oracle import SCHEDULES, MakeJit, _is_unsupported, repro_source, run_program
from fusion_alias.fuzz.program import Program
from fusion_alias.fuzz.shrinker import shrink
from fusion_alias.fuzz.source import _make_inputs_source, _prog_source


@dataclasses.dataclass
class Failure:
    program: Program
    schedule: str
    status: str  # mismatch | missed-rejection
    detail: str
    repro: str
    shrunk: Program | None = None
    shrunk_repro: str | None = None
    shrunk_detail: str | None = None


@dataclasses.dataclass
class FuzzReport:
    programs: int = 0
    seconds: float = 0.0
    hazards: int = 0
    ok: int = 0
    both_raised: int = 0
    mismatches: list[Failure] = dataclasses.field(default_factory=list)
    missed_rejections: list[Failure] = dataclasses.field(default_factory=list)
    unsupported: list[tuple[str, str, str]] = dataclasses.field(default_factory=list)  # (program, schedule, msg)
    jit_errors: list[tuple[str, str, str]] = dataclasses.field(default_factory=list)
    # --grad: wrong gradients of programs with no in-place op, where plain thunder.jit is wrong too
    thunder_autodiff: list[tuple[str, str, str]] = dataclasses.field(default_factory=list)

    @property
    def failures(self) -> list[Failure]:
        return self.mismatches + self.missed_rejections

    @property
    def programs_per_second(self) -> float:
        return self.programs / self.seconds if self.seconds > 0 else float("nan")

    def summary(self) -> str:
        frac = self.hazards / self.programs if self.programs else 0.0
        return (
            f"fuzz summary: programs={self.programs} seconds={self.seconds:.1f} "
            f"programs/s={self.programs_per_second:.2f} with-hazard={self.hazards} ({frac:.0%}) "
            f"mismatches={len(self.mismatches)} missed-rejections={len(self.missed_rejections)} "
            f"jit-unsupported={len(self.unsupported)} jit-errors={len(self.jit_errors)} "
            f"both-raised={self.both_raised}"
            + (f" thunder-autodiff={len(self.thunder_autodiff)}" if self.thunder_autodiff else "")
        )

    def exit_code(self, strict: bool = False) -> int:
        bad = bool(self.failures) or (strict and bool(self.unsupported or self.jit_errors))
        return 1 if bad else 0


MakeJit = Callable[[Callable, str], Callable]


def run_fuzz(
    programs: int = 100,
    seed: int = 0,
    schedules: Sequence[str] = SCHEDULES,
    time_budget: float | None = None,
    unsafe_ignore_hazards: bool = False,
    system: str = "fusion_alias",
    make_jit: MakeJit | None = None,
    max_stmts: int = 8,
    error_rate: float = 0.05,
    do_shrink: bool = True,
    stop_after_failures: int | None = None,
    only: Sequence[int] | None = None,
    verbose: bool = False,
    log: Callable[[str], None] | None = None,
    grad: bool = False,
) -> FuzzReport:
    """Generate and run ``programs`` programs; returns a ``FuzzReport``.

    ``system``: ``fusion_alias`` (``fusion_alias.jit`` with the reference
    backend; ``unsafe_ignore_hazards`` passed through), or a stand-in:
    ``thunder`` (``thunder.jit``), ``thunder-skip`` (``thunder.jit(...,
    skip_inplace_alias_updates=True)``), ``eager``. ``make_jit(fn, schedule)``
    overrides the system with any callable (repros then cannot be rendered
    with it). Stand-ins ignore the schedule, so they run once per program.
    ``grad``: inputs require grad and gradients are compared too (Note
    [gradients in the fuzzer]).
    """
    log = log or (lambda s: None)
    if system != "fusion_alias" and make_jit is None:
        schedules = schedules[:1]
    report = FuzzReport()
    start = time.perf_counter()
    indices = list(only) if only is not None else range(programs)
    for index in indices:
        if time_budget is not None and time.perf_counter() - start > time_budget:
            log(f"time budget of {time_budget}s spent after {report.programs} programs")
            break
        p = generate_program(seed, index, max_stmts=max_stmts, error_rate=error_rate)
        if grad:
            p = p.replace(grad=True)
        report.programs += 1
        hazard = has_alias_hazard(p)
        report.hazards += hazard
        if verbose:
            log(f"--- program {p.name} (hazard={hazard})\n{_make_inputs_source(p)}{_prog_source(p)}")
        for schedule in schedules:
            try:
                status, detail = run_program(p, schedule, system, unsafe_ignore_hazards, make_jit)
            except Exception as e:  # noqa: BLE001 - harness error: report as a jit error
                status, detail = "jit-raised", "harness: " + "".join(traceback.format_exception(e))
            if verbose:
                log(f"    {schedule}: {status}")
            if status == "ok":
                report.ok += 1
            elif status == "both-raised":
                report.both_raised += 1
            elif status == "jit-raised":
                kind = report.unsupported if _is_unsupported(detail) else report.jit_errors
                kind.append((p.name, schedule, _last_line(detail)))
                log(f"program {p.name} [{schedule}]: jit raised ({'unsupported' if kind is report.unsupported else 'error'}): {_last_line(detail)}")
                if verbose:
                    log(detail)
            elif _thunder_autodiff_bug(p, status, system, make_jit):
                report.thunder_autodiff.append((p.name, schedule, _last_line(detail)))
                log(f"program {p.name} [{schedule}]: wrong gradient with no in-place op, plain thunder.jit too "
                    f"(Thunder's autodiff, not an alias program): {_last_line(detail)}")
            else:
                f = Failure(p, schedule, status, detail, repro_source(p, (schedule,), system, unsafe_ignore_hazards))
                (report.mismatches if status == "mismatch" else report.missed_rejections).append(f)
                log(f"\n=== {status.upper()}: program {p.name}, schedule {schedule}\n{detail}\n--- repro:\n{f.repro}")
                if do_shrink:
                    f.shrunk, f.shrunk_detail = shrink(p, schedule, status, system, unsafe_ignore_hazards, make_jit)
                    f.shrunk_detail = f.shrunk_detail or detail
                    f.shrunk_repro = repro_source(f.shrunk, (schedule,), system, unsafe_ignore_hazards)
                    log(f"--- shrunk repro ({len(f.shrunk.stmts)} statements):\n{f.shrunk_repro}\n--- shrunk failure:\n{f.shrunk_detail}\n")
                break  # one failure per program is enough
        if stop_after_failures is not None and len(report.failures) >= stop_after_failures:
            break
    report.seconds = time.perf_counter() - start
    return report


def _thunder_autodiff_bug(p: Program, status: str, system: str, make_jit) -> bool:
    """A --grad mismatch in a program with no in-place op that plain ``thunder.jit`` gets wrong too.

    Such a program has nothing to alias-check: fusion_alias hands it to Thunder's
    autodiff unchanged (Thunder 0.2.6 gets ``torch.where(a > 0, a, a)`` with a 0-d
    ``a`` wrong, for one). It is reported, not counted as a failure of ours.
    """
    if not p.grad or status != "mismatch" or system != "fusion_alias" or make_jit is not None:
        return False
    if any(s.writes is not None for s in p.stmts):
        return False
    try:
        thunder_status, _ = run_program(p, SCHEDULES[0], "thunder")
    except Exception:  # noqa: BLE001
        return False
    return thunder_status == "mismatch"


def _last_line(s: str) -> str:
    lines = [ln for ln in s.strip().splitlines() if ln.strip()]
    return lines[-1][:300] if lines else ""
