"""The oracle: eager PyTorch on fresh inputs against the system under test, per
schedule, first and cached call; outputs, arguments and bases compared
(and leaf gradients with ``--grad``)."""

from __future__ import annotations

import warnings
from typing import Callable, Sequence

from fusion_alias.fuzz.program import Program
from fusion_alias.fuzz.source import _make_inputs_source, _make_jit_source, _prog_source

SCHEDULES = ("reads-first", "writes-first")

MakeJit = Callable[[Callable, str], Callable]


# Note [gradients in the fuzzer]
#     With ``--grad`` (``Program.grad``), every base is ``leaf * 1`` with a leaf
#     that requires grad, so eager accepts writes into the arguments. After each
#     call, a fixed random weighting of the outputs that require grad is summed
#     and back-propagated, and the leaves' gradients are compared with eager's
#     (a missing gradient counts as zeros: eager keeps a zero-gradient edge through
#     ``t0 = -b; t0.copy_(a)`` where Thunder has none). An error eager raises only in the
#     backward (a tensor saved for it was overwritten) makes the program not
#     comparable: it counts as both-raised. fusion_alias refuses writes into
#     inputs that require grad (Note [writes into inputs that require grad]);
#     such refusals count as unsupported, and every program it accepts must
#     match eager's values and gradients.
_DRIVER = '''
def _as_list(out):
    return list(out) if isinstance(out, (tuple, list)) else [out]


def _run(fn):
    """(outputs, bases, args, leaf gradients, error, phase of the error) of one call on fresh inputs."""
    bases, args, *rest = make_inputs()
    leaves = rest[0] if rest else []  # --grad: the leaves the bases are derived from
    try:
        out = _as_list(fn(*args))
    except Exception as e:  # noqa: BLE001 - any exception counts as a rejection
        return None, bases, args, None, e, "forward"
    if leaves:
        try:
            weights = torch.Generator().manual_seed(1)
            diff = [o for o in out if isinstance(o, torch.Tensor) and o.requires_grad]
            if diff:
                sum((o * torch.rand(o.shape, generator=weights, dtype=o.dtype)).sum() for o in diff).backward()
        except Exception as e:  # noqa: BLE001
            return None, bases, args, None, e, "backward"
        out = [o.detach() if isinstance(o, torch.Tensor) else o for o in out]
    return out, bases, args, [leaf.grad for leaf in leaves], None, None


def check(schedule, make_jit=make_jit):
    """Eager vs jitted on fresh inputs, two calls. Returns (status, detail);
    status is ok, both-raised, jit-raised, missed-rejection or mismatch."""
    want, want_bases, want_args, want_grads, want_err, want_phase = _run(prog)
    if want_phase == "backward":
        return "both-raised", f"not comparable: eager's backward raised {want_err!r}"
    try:
        jitted = make_jit(prog, schedule)
    except Exception as e:  # noqa: BLE001
        if want_err is not None:
            return "both-raised", repr(e)
        return "jit-raised", "make_jit: " + "".join(traceback.format_exception(e))
    for call in (1, 2):
        got, got_bases, got_args, got_grads, got_err, got_phase = _run(jitted)
        if want_err is not None:
            if got_err is None:
                return "missed-rejection", f"call {call}: eager raised {want_err!r}; the jitted call returned"
            return "both-raised", f"eager: {want_err!r}; jitted: {got_err!r}"
        if got_err is not None:
            return "jit-raised", f"call {call} ({got_phase}): " + "".join(traceback.format_exception(got_err))
        compared = [("outputs", got, want), ("arguments after the call", got_args, want_args),
                    ("base tensors after the call", got_bases, want_bases)]
        if want_grads:  # None (no gradient flowed) stands for zeros: see Note [gradients in the fuzzer]
            zeros = [torch.zeros_like(b) for b in want_bases]
            compared.append(("leaf gradients (None as zeros)", [z if g is None else g for g, z in zip(got_grads, zeros)],
                             [z if w is None else w for w, z in zip(want_grads, zeros)]))
        for what, g, w in compared:
            try:
                torch.testing.assert_close(g, w, equal_nan=True)
            except AssertionError as e:
                return "mismatch", f"call {call}: {what} differ from eager:\\n{e}"
    return "ok", ""
'''


def program_source(p: Program, system: str = "fusion_alias", unsafe: bool = False) -> str:
    """The exact source the runner executes: inputs, program, jit, driver."""
    return (
        "import traceback\n\nimport torch\n\n\n"
        + _make_inputs_source(p)
        + "\n\n"
        + _prog_source(p)
        + "\n\n"
        + _make_jit_source(system, unsafe)
        + "\n"
        + _DRIVER
    )


def repro_source(p: Program, schedules: Sequence[str], system: str = "fusion_alias", unsafe: bool = False) -> str:
    """A self-contained script: ``program_source`` plus a ``__main__`` block."""
    return (
        f"# fusion_alias fuzz repro: program {p.name}\n"
        + program_source(p, system, unsafe)
        + "\n\nif __name__ == \"__main__\":\n"
        + "    failed = False\n"
        + f"    for schedule in {tuple(schedules)!r}:\n"
        + "        status, detail = check(schedule)\n"
        + "        print(schedule, status, detail)\n"
        + "        failed |= status in ('mismatch', 'missed-rejection')\n"
        + "    raise SystemExit(1 if failed else 0)\n"
    )


def _load(p: Program, system: str, unsafe: bool) -> dict:
    src = program_source(p, system, unsafe)
    ns: dict = {"__name__": f"fusion_alias_fuzz_program"}
    exec(compile(src, f"<fuzz program {p.name}>", "exec"), ns)
    return ns


def run_program(
    p: Program, schedule: str, system: str = "fusion_alias", unsafe: bool = False, make_jit: MakeJit | None = None
) -> tuple[str, str]:
    """Run ``p``'s own ``check(schedule)``: returns (status, detail)."""
    ns = _load(p, system, unsafe)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if make_jit is not None:
            return ns["check"](schedule, make_jit)
        return ns["check"](schedule)


def _is_unsupported(detail: str) -> bool:
    low = detail.lower()
    return any(
        k in low
        for k in ("notimplemented", "not supported", "unsupported", "not implemented", "unknown attribute")
    )
