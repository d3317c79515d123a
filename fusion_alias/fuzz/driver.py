"""The fuzz loop and its report: generate, check every schedule, classify,
shrink the failures."""

from __future__ import annotations

import dataclasses
import time
import traceback
from typing import Callable, Sequence

from fusion_alias.fuzz import modules_process
from fusion_alias.fuzz.gen_edges import GRAD_REFUSALS, IDENTITY_REFUSALS
from fusion_alias.fuzz.generator import generate_program
from fusion_alias.fuzz.hazard import has_alias_hazard
from fusion_alias.fuzz.oracle import SCHEDULES, MakeJit, _is_unsupported, exception_type, repro_source, run_program
from fusion_alias.fuzz.program import GENERATORS, Program
from fusion_alias.fuzz.shrinker import shrink
from fusion_alias.fuzz.source import _holders_source, _make_inputs_source, _prog_source


@dataclasses.dataclass
class Failure:
    program: Program
    schedule: str
    status: str  # mismatch | missed-rejection | jit-raised (an error eager does not raise)
    detail: str
    repro: str
    shrunk: Program | None = None
    shrunk_repro: str | None = None
    shrunk_detail: str | None = None
    thunder_status: str | None = None  # plain thunder.jit on the same program: ok, mismatch, ...


# Note [what a raise of the jitted call counts as]
#     When eager returns and the jitted call raises, the raise is one of:
#       * unsupported by Thunder: plain ``thunder.jit`` raises the same exception
#         type on the same program (Thunder 0.2.6 has no Tensor.fill_diagonal_),
#         or returns a wrong value or raises where fusion_alias names
#         Thunder's inconsistent trace (``TraceShapeError``, Note [Thunder's wrong
#         0-d gradients]): reported, not a failure of fusion_alias;
#       * refused: fusion_alias's own clear refusal (an AliasInputError or
#         NotImplementedError saying what is not supported): reported, not a failure;
#       * an unexpected error (any other exception, a refusal claiming eager
#         rejects the program when eager did not ("eager PyTorch rejects this
#         too"), or a refusal of a program whose ``refusals`` (gen_edges.py) do not
#         list it): a FAILURE, shrunk and printed like a wrong value, unless
#         ``allow_jit_errors``.
#     ``strict`` makes all three fail. And where the jitted calls all return, a program holding a
#     statement fusion_alias must refuse (a Python decision on ``x.item()``, an RNG in-place method) is a
#     missed rejection (oracle.py, Note [statements fusion_alias must refuse]).


@dataclasses.dataclass
class FuzzReport:
    programs: int = 0
    runs: int = 0  # (program, schedule) pairs run
    seconds: float = 0.0
    hazards: int = 0
    ok: int = 0
    both_raised: int = 0
    mismatches: list[Failure] = dataclasses.field(default_factory=list)
    missed_rejections: list[Failure] = dataclasses.field(default_factory=list)
    # refusals by fusion_alias (program, schedule, msg): Note [what a raise of the jitted call counts as]
    unsupported: list[tuple[str, str, str]] = dataclasses.field(default_factory=list)
    # raises plain thunder.jit makes too
    thunder_unsupported: list[tuple[str, str, str]] = dataclasses.field(default_factory=list)
    # unexpected errors, as (program, schedule, msg) and as failures
    jit_errors: list[tuple[str, str, str]] = dataclasses.field(default_factory=list)
    errors: list[Failure] = dataclasses.field(default_factory=list)
    allow_jit_errors: bool = False
    # --grad: wrong gradients of programs with no in-place op, where plain thunder.jit is wrong too
    thunder_autodiff: list[tuple[str, str, str]] = dataclasses.field(default_factory=list)
    schedules: tuple[str, ...] = ()
    per_generator: dict[str, int] = dataclasses.field(default_factory=dict)  # generator -> programs
    failed_per_generator: dict[str, int] = dataclasses.field(default_factory=dict)  # generator -> failing programs
    # generator -> runs fusion_alias refused: a needless refusal shows next to its generator (the ``fresh``
    # generator's programs should all be accepted; the ``strided`` one's writes into self-overlapping views refused)
    refused_per_generator: dict[str, int] = dataclasses.field(default_factory=dict)

    @property
    def failures(self) -> list[Failure]:
        return self.mismatches + self.missed_rejections + ([] if self.allow_jit_errors else self.errors)

    @property
    def programs_per_second(self) -> float:
        return self.programs / self.seconds if self.seconds > 0 else float("nan")

    def summary(self) -> str:
        frac = self.hazards / self.programs if self.programs else 0.0
        accepted = self.runs - self.both_raised - len(self.missed_rejections)  # runs eager returns from
        refused = len(self.unsupported) / accepted if accepted > 0 else 0.0
        gens = " ".join(f"{g}={n}" + (f"(failed {self.failed_per_generator[g]})" if self.failed_per_generator.get(g) else "")
                        + (f"(refused {self.refused_per_generator[g]} runs)" if self.refused_per_generator.get(g) else "")
                        for g, n in sorted(self.per_generator.items()))
        return (
            f"fuzz summary: programs={self.programs} seconds={self.seconds:.1f} "
            f"programs/s={self.programs_per_second:.2f} with-hazard={self.hazards} ({frac:.0%}) "
            f"mismatches={len(self.mismatches)} missed-rejections={len(self.missed_rejections)} "
            f"jit-errors={len(self.jit_errors)}{' (allowed)' if self.allow_jit_errors else ''} "
            f"jit-unsupported={len(self.unsupported)} thunder-unsupported={len(self.thunder_unsupported)} "
            f"both-raised={self.both_raised}"
            + (f" thunder-autodiff={len(self.thunder_autodiff)}" if self.thunder_autodiff else "")
            + f"\nfuzz refused: {len(self.unsupported)} of {accepted} runs eager accepts ({refused:.0%})"
            + f"\nfuzz runs per generator (programs x {len(self.schedules)} schedules "
            f"{','.join(self.schedules)}): {gens}"
        )

    def exit_code(self, strict: bool = False) -> int:
        bad = bool(self.failures) or (
            strict and bool(self.unsupported or self.jit_errors or self.thunder_unsupported)
        )
        return 1 if bad else 0


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
    generators: Sequence[str] = GENERATORS,
    allow_jit_errors: bool = False,
) -> FuzzReport:
    """Generate and run ``programs`` programs; returns a ``FuzzReport``.

    ``system``: ``fusion_alias`` (``fusion_alias.jit`` with the reference
    backend; ``unsafe_ignore_hazards`` passed through), or a stand-in:
    ``thunder`` (``thunder.jit``), ``thunder-skip`` (``thunder.jit(...,
    skip_inplace_alias_updates=True)``), ``eager``. ``make_jit(fn, schedule)``
    overrides the system with any callable (repros then cannot be rendered
    with it). Stand-ins ignore the schedule, so they run once per program.
    ``grad``: inputs require grad and gradients are compared too (Note
    [gradients in the fuzzer]). ``generators``: which program generators to
    draw from (``GENERATORS``). ``allow_jit_errors``: an unexpected raise of
    the jitted call is reported but not a failure (Note [what a raise of the
    jitted call counts as]).
    """
    log = log or (lambda s: None)
    if system != "fusion_alias" and make_jit is None:
        schedules = schedules[:1]
    report = FuzzReport(allow_jit_errors=allow_jit_errors, schedules=tuple(schedules))
    thunder_raises: dict[str, tuple[str, str]] = {}  # program -> plain thunder.jit's (status, detail)
    start = time.perf_counter()
    indices = list(only) if only is not None else range(programs)
    for index in indices:
        if time_budget is not None and time.perf_counter() - start > time_budget:
            log(f"time budget of {time_budget}s spent after {report.programs} programs")
            break
        with modules_process.isolated():  # (the generator's eager runs may change process settings: modules_process.py)
            p = generate_program(seed, index, max_stmts=max_stmts, error_rate=error_rate, generators=generators,
                                 grad=grad)
        if grad:
            p = p.replace(grad=True)
        report.programs += 1
        report.per_generator[p.kind] = report.per_generator.get(p.kind, 0) + 1
        hazard = has_alias_hazard(p)
        report.hazards += hazard
        if verbose:
            log(f"--- program {p.name} [{p.kind}] (hazard={hazard})\n{_program_text(p)}")
        for schedule in schedules:
            report.runs += 1
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
            elif status == "jit-raised" and (why := _expected_raise(p, schedule, detail, system, make_jit, thunder_raises)):
                kind = report.thunder_unsupported if why == "thunder" else report.unsupported
                kind.append((p.name, schedule, _last_line(detail)))
                if why != "thunder":
                    report.refused_per_generator[p.kind] = report.refused_per_generator.get(p.kind, 0) + 1
                what = "unsupported by Thunder (plain thunder.jit raises the same)" if why == "thunder" else "refused"
                log(f"program {p.name} [{schedule}]: jit raised, {what}: {_last_line(detail)}")
                if verbose:
                    log(detail)
            elif _thunder_autodiff_bug(p, status, system, make_jit):
                report.thunder_autodiff.append((p.name, schedule, _last_line(detail)))
                log(f"program {p.name} [{schedule}]: wrong gradient with no in-place op, plain thunder.jit too "
                    f"(Thunder's autodiff, not an alias program): {_last_line(detail)}")
            else:
                f = Failure(p, schedule, status, detail, repro_source(p, (schedule,), system, unsafe_ignore_hazards))
                {"mismatch": report.mismatches, "missed-rejection": report.missed_rejections}.get(
                    status, report.errors).append(f)
                if status == "jit-raised":
                    report.jit_errors.append((p.name, schedule, _last_line(detail)))
                report.failed_per_generator[p.kind] = report.failed_per_generator.get(p.kind, 0) + 1
                if system == "fusion_alias" and make_jit is None:
                    f.thunder_status = _plain_thunder(p, schedule, thunder_raises)[0]
                shown = _program_text(p) if do_shrink else f.repro  # the shrunk one is printed whole below
                log(f"\n=== {status.upper()}: program {p.name} [{p.kind}], schedule {schedule} "
                    f"(plain thunder.jit: {f.thunder_status or 'not run'})\n{detail}\n--- program:\n{shown}")
                if do_shrink:
                    f.shrunk, f.shrunk_detail = shrink(p, schedule, status, system, unsafe_ignore_hazards, make_jit,
                                                       detail=detail)
                    f.shrunk_detail = f.shrunk_detail or detail
                    f.shrunk_repro = repro_source(f.shrunk, (schedule,), system, unsafe_ignore_hazards)
                    log(f"--- shrunk repro ({len(f.shrunk.stmts)} statements):\n{f.shrunk_repro}\n--- shrunk failure:\n{f.shrunk_detail}\n")
                break  # one failure per program is enough
        if stop_after_failures is not None and len(report.failures) >= stop_after_failures:
            break
    report.seconds = time.perf_counter() - start
    return report


def _program_text(p: Program) -> str:
    """The program part of a repro: holders, inputs, body, and the call sequence."""
    return (f"{_holders_source(p)}\n{_make_inputs_source(p)}\n{_prog_source(p)}"
            f"# calls (aliasing variant of each): {p.calls}\n")


def _plain_thunder(p: Program, schedule: str, cache: dict) -> tuple[str, str]:
    """(status, detail) of plain ``thunder.jit`` on ``p`` (once per program: it has no schedule)."""
    if p.name not in cache:
        try:
            cache[p.name] = run_program(p, schedule, "thunder")
        except Exception as e:  # noqa: BLE001
            cache[p.name] = ("harness-error", repr(e))
    return cache[p.name]


def _expected_raise(p: Program, schedule: str, detail: str, system: str, make_jit, cache: dict) -> str | None:
    """"thunder", "refused" or None (unexpected): Note [what a raise of the jitted call counts as]."""
    if system != "fusion_alias" or make_jit is not None:
        return "refused" if _is_unsupported(detail) else None
    status, thunder_detail = _plain_thunder(p, schedule, cache)
    if status == "jit-raised" and exception_type(thunder_detail) == exception_type(detail):
        return "thunder"
    if (status == "jit-raised" and (exception_type(detail) or "").endswith("UnsupportedMethodError")
            and exception_type(thunder_detail) == "builtins.AttributeError"):
        return "thunder"  # Thunder's "Unknown attribute t_", named (inplace_lookasides.py, Note [in-place methods Thunder lacks])
    if status in ("mismatch", "jit-raised") and (exception_type(detail) or "").endswith("TraceShapeError"):
        # Note [Thunder's wrong 0-d gradients] (lowering.py): Thunder's own wrong gradient, named; plain
        # thunder.jit returns it, or fails on the same trace with an error of its own (seed 19930 #3, --grad:
        # "expand: the requested shape has too few dimensions!")
        return "thunder"
    if not p.grad and "eager pytorch raises at backward" in _message(detail):
        # a call whose backward eager would reject (a saved tensor overwritten: docs/limits.md), in a run that
        # runs no backward (the modules generator's parameters require grad without --grad); with --grad
        # eager's backward runs first and such a call is not comparable
        return "refused"
    if not _is_refusal(detail) or _claims_eager_rejects(detail):
        return None
    return "refused" if _documented_refusal(p, detail) else None


def _message(detail: str) -> str:
    lines = [ln for ln in detail.strip().splitlines() if ln.strip()]
    return (lines[-1] if lines else "").lower()


def _claims_eager_rejects(detail: str) -> bool:
    """A refusal saying eager PyTorch rejects the program, of a call eager ran: a false claim, so an
    unexpected error (Note [what a raise of the jitted call counts as])."""
    return "eager pytorch rejects this too" in _message(detail)


def _documented_refusal(p: Program, detail: str) -> bool:
    """Whether a refusal is one ``p`` may get: any clear one, or where ``p.refusals`` lists the documented
    refusals of its class, one whose message holds a piece of them (with --grad also those of calls
    that compute gradients). Note [one class per program, and the refusals it may get] (gen_edges.py)."""
    if p.refusals is None:
        return True
    allowed = p.refusals + IDENTITY_REFUSALS + (GRAD_REFUSALS if p.grad else ())
    message = _message(detail)
    return any(piece in message for piece in allowed)


# fusion_alias.AliasInputError and its subclasses, autocast_dtypes.AutocastDtypeError, item_branches.
# DataDependentBranchError (a NotImplementedError named otherwise: gen_item.py) and inplace_lookasides.
# UnsupportedMethodError (an AttributeError: Tensor.exponential_, gen_edges.py's rng class), errors.TracingRefusal
# (a NotImplementedError named otherwise: outside_reads.py's iterators) (the traceback names the class raised)
_REFUSAL_TYPES = ("AliasInputError", "WriteIntoGradInput", "ViewLayoutError", "AutocastDtypeError",
                  "DataDependentBranchError", "UnsupportedMethodError", "TracingRefusal")


def _is_refusal(detail: str) -> bool:
    """fusion_alias's own refusal: an AliasInputError saying what is not supported, or a
    NotImplementedError (no lowering, no reference implementation)."""
    kind = exception_type(detail) or ""
    lines = [ln for ln in detail.strip().splitlines() if ln.strip()]
    message = (lines[-1] if lines else "").lower()  # the whole message: "not supported" may come late
    if kind.endswith(_REFUSAL_TYPES):
        return "not supported" in message or "unsupported" in message
    return kind.endswith("NotImplementedError")


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
