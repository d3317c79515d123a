"""Build every region's real nvFuser definition on CPU, without executing it.

``python -m fusion_alias.nvfuser_check`` (or ``scripts/check_nvfuser_definitions.sh``,
which makes the Python 3.12 + torch 2.10 + ``nvfuser_direct`` environment first)
compiles programs through ``fusion_alias.jit`` on CPU tensors (the reference
backend runs them), records each region's spec and the layouts of the
arguments each region was called with, and then builds, for every region and
layout, the definition the nvFuser backend would build on a GPU: the same
``fusion_alias.backends.nvfuser.build_definition`` (the same adapter and the
same ``lowering.define_region``) on a real ``nvfuser_direct.FusionDefinition``.

Programs: the seed programs (tests/programs.py, also run by
examples/seed_repros.py), every benchmark program (fusion_alias/bench/programs.py)
and a fuzz sample (``fusion_alias.fuzz.generate_program``).

Note [what the check proves, and what it does not]
--------------------------------------------------
nvFuser's frontend rejects, while a definition is built: unknown ops and wrong
op signatures, dtypes it has no ``DataType`` for, CPU tensors that are not 0-d,
ill-formed shapes (a broadcast to a shape that does not fit, a squeeze of a
dimension that is not 1). It does *not* reject, at build time, an aliased
output of another dtype or rank than its input, or an empty fusion; those fail
only at ``execute``. The adapter checks the first (``_check_write_back``), and
this check adds, per built definition: ``validate_definition()`` (nvFuser's own
"is it empty" test), the number of inputs and of plain outputs, and each plain
output's rank and dtype against the trace. Tensors are described as a GPU run
would see them (``is_cpu=False``; 0-d CPU tensors are moved to the device too,
as the CUDA tests do). What only a GPU shows: segmentation, kernel compilation,
whether nvFuser's scheduler accepts a fusion, and the values.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import sys
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from unittest import mock

import torch

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@dataclass
class RegionRecord:
    """One region of one compiled program, and the argument layouts it was called with."""

    program: str
    spec: object
    layouts: dict = field(default_factory=dict)  # key -> [(shape, strides)] of the tensor arguments
    called: bool = False


@dataclass
class Outcome:
    program: str
    region: str
    definitions: int = 0
    error: str | None = None
    nothing: bool = False  # no write-back and no fresh output: nvFuser is not called
    text: list[str] = field(default_factory=list)


class _RecordingCallable:
    """Wraps the reference callable of a region: records argument layouts, then runs it."""

    def __init__(self, record: RegionRecord, inner):
        self._record = record
        self._inner = inner

    def __call__(self, *args):
        tensors = [(tuple(a.shape), tuple(a.stride())) for a in args if isinstance(a, torch.Tensor)]
        self._record.layouts.setdefault(tuple(tensors), tensors)
        self._record.called = True
        return self._inner(*args)

    def __getattr__(self, name):  # explain(), regions(): the reference callable's attributes
        return getattr(self._inner, name)


def _error_line(e: BaseException) -> str:
    from fusion_alias.backends import nvfuser as nvb

    return nvb.error_line(e)


def collect_regions(name: str, fn: Callable, args: Sequence) -> tuple[list[RegionRecord], str | None]:
    """Compile and run ``fn(*args)`` on the reference backend; every region it made, with layouts.

    Returns (regions, error): error is the exception text when compiling or running raised
    (a fuzz program eager rejects too, or one fusion_alias refuses); regions made before that are kept.
    """
    import importlib

    import fusion_alias

    executor = importlib.import_module("fusion_alias.executor")  # the module (fusion_alias.executor is the executor object)

    records: list[RegionRecord] = []
    real = executor.make_callable

    def recording(spec, backend, schedule):
        record = RegionRecord(name, spec)
        records.append(record)
        return _RecordingCallable(record, real(spec, "reference", schedule))

    error = None
    with mock.patch.object(executor, "make_callable", recording), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            jitted = fusion_alias.jit(fn, backend="reference")
            jitted(*args)
        except Exception as e:  # noqa: BLE001 - reported, not fatal
            error = f"{type(e).__name__}: {_error_line(e)}"
    return records, error


def _gpu_layouts(nv, tensors: Sequence[tuple]) -> list[tuple]:
    """The layouts nvFuser is given on a GPU run: every tensor on the device (``is_cpu=False``)."""
    out = []
    for shape, strides in tensors:
        contiguity, stride_order = nv.compute_tensor_descriptor(list(shape), list(strides))
        out.append((shape, list(contiguity), list(stride_order), False))
    return out


def _contiguous(spec) -> list[tuple]:
    from thunder.core.proxies import TensorProxy

    out = []
    for p in spec.inputs:
        if isinstance(p, TensorProxy):
            shape = tuple(int(s) for s in p.shape)
            strides, acc = [], 1
            for s in reversed(shape):
                strides.append(acc)
                acc *= max(s, 1)
            out.append((shape, tuple(reversed(strides))))
    return out


def _validate(nv, spec, built) -> None:
    """What nvFuser would reject only at execute (Note [what the check proves, and what it does not])."""
    from thunder.core import dtypes
    from thunder.core.proxies import NumberProxy, TensorProxy

    from fusion_alias.lowering import datatype, emitted_outputs

    fd = built.fd
    ok, why = fd.validate_definition()
    if not ok:
        raise RuntimeError(f"nvFuser: {why}")
    fusion = fd.fusion
    fed = [p for p in spec.inputs if isinstance(p, (TensorProxy, NumberProxy))]
    if len(fusion.inputs()) != len(fed):
        raise RuntimeError(f"the definition has {len(fusion.inputs())} inputs, the region feeds {len(fed)}")
    emitted = emitted_outputs(spec)
    if built.plain_outputs != len(emitted):
        raise RuntimeError(f"{built.plain_outputs} plain outputs, the plan expects {len(emitted)} ({emitted})")
    outs = list(fusion.outputs())
    deferred = len(built.deferred)  # write-backs into strided inputs, copied by the wrapper
    if len(outs) != built.plain_outputs + built.aliased_outputs + deferred:
        raise RuntimeError(
            f"{len(outs)} fusion outputs, expected {built.plain_outputs} + {built.aliased_outputs} aliased + {deferred} deferred"
        )
    outs = outs[: len(outs) - deferred]
    plain = outs[len(outs) - len(emitted) :] if emitted else []
    by_name = {p.name: p for p in list(spec.outputs) + list(spec.extra_outputs)}
    for name, value in zip(emitted, plain):
        p = by_name.get(name)
        if not isinstance(p, TensorProxy):
            continue
        if not value.is_tensor():
            raise RuntimeError(f"output {name}: a scalar in the definition, a tensor in the trace")
        if value.ndim != len(p.shape):
            raise RuntimeError(f"output {name}: rank {value.ndim} in the definition, {len(p.shape)} in the trace")
        want = datatype(nv.DataType, dtypes.to_strong_dtype(p.dtype))
        if value.dtype() != want:
            raise RuntimeError(f"output {name}: dtype {value.dtype()} in the definition, {want} in the trace")


def build_region(nv, record: RegionRecord, show: bool = False) -> Outcome:
    """Build (and validate) the definition of ``record``'s region for every layout it was called with."""
    from fusion_alias.backends import nvfuser as nvb

    spec = record.spec
    outcome = Outcome(record.program, spec.name)
    reason = nvb.unsupported_reason(spec)
    if reason is not None:  # the backend runs it on torch (Note [regions nvFuser does not take])
        if show:
            outcome.text.append(f"# {record.program} / {spec.name}: not sent to nvFuser: {reason}")
        return outcome
    if nvb.nothing_to_run(spec):  # no definition: the wrapper replays views only
        outcome.nothing = True
        if show:
            outcome.text.append(f"# {record.program} / {spec.name}: nothing for nvFuser to run (every result is a view)")
        return outcome
    layouts = list(record.layouts.values()) or [_contiguous(spec)]
    for tensors in layouts:
        sink = io.StringIO()
        try:
            # nvfuser_direct's FusionDefinition.__exit__ prints the exception and its traceback
            with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
                built = nvb.build_definition(nv, spec, _gpu_layouts(nv, tensors))
            _validate(nv, spec, built)
        except Exception as e:  # noqa: BLE001 - every rejection is a finding
            outcome.error = f"layout {tensors}: {type(e).__name__}: {_error_line(e)}"
            return outcome
        outcome.definitions += 1
        if show:
            where = "copied by the wrapper after execute" if built.deferred else "in the kernel"
            writes = f"; write-backs {where}" if spec.writebacks else ""
            outcome.text.append(f"# {record.program} / {spec.name}, tensor layouts {tensors}{writes}\n{nvb._definition_text(built.fd)}")
    return outcome


# ---------------------------------------------------------------------------
# The programs
# ---------------------------------------------------------------------------


def seed_programs() -> list[tuple[str, Callable, Callable[[], tuple]]]:
    """tests/programs.py's seed programs on their 5x5 inputs (examples/seed_repros.py runs the same)."""
    tests = os.path.join(REPO, "tests")
    if tests not in sys.path:
        sys.path.insert(0, tests)
    from programs import SEED_PROGRAMS

    def maker(make_inputs):
        return lambda: make_inputs(torch.randn(5, 5, generator=torch.Generator().manual_seed(0)))

    return [(f"seed {fn.__name__}", fn, maker(mk)) for fn, mk, _ in SEED_PROGRAMS]


def bench_programs() -> list[tuple[str, Callable, Callable[[], tuple]]]:
    from fusion_alias.bench.programs import SUITE

    return [(f"bench {p.name}", p.fn, lambda p=p: p.make_inputs(0)) for p in SUITE]


def fuzz_programs(count: int, seed: int) -> list[tuple[str, Callable, Callable[[], tuple]]]:
    from fusion_alias.fuzz import generate_program, program_source

    out = []
    for index in range(count):
        p = generate_program(seed, index)
        ns: dict = {"__name__": "fusion_alias_nvfuser_check"}
        exec(compile(program_source(p), f"<fuzz program {p.name}>", "exec"), ns)
        out.append((f"fuzz {p.name}", ns["prog"], lambda ns=ns: _fuzz_args(ns)))
    return out


def _fuzz_args(ns: dict) -> list:
    """The arguments of a fuzz program's first call, with its hidden tensors and numbers installed
    (globals, closure cells, option dicts): without ``install_hidden`` the program read ``None`` or a
    missing key and raised in eager too (seed 0 #4 ``KeyError: 'n0'``, #13 ``_foreach_mul`` of None)."""
    _bases, args, _leaves, hidden = ns["make_inputs"]()
    ns["install_hidden"](hidden)
    return args


# ---------------------------------------------------------------------------
# Driver
# ---------------------------------------------------------------------------


def run(programs, nv, show: bool = False, log=print) -> tuple[list[Outcome], list[tuple[str, str]]]:
    outcomes: list[Outcome] = []
    not_compiled: list[tuple[str, str]] = []
    for i, (name, fn, make_args) in enumerate(programs):
        if i and i % 50 == 0:
            log(f"    ... {i} programs, {len(outcomes)} regions so far")
        records, error = collect_regions(name, fn, make_args())
        if error is not None:
            not_compiled.append((name, error))
        for record in records:
            o = build_region(nv, record, show)
            outcomes.append(o)
            for t in o.text:
                log(t)
            if o.error:
                log(f"FAILED {o.program} / {o.region}: {o.error}")
    return outcomes, not_compiled


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Build every region's real nvFuser definition on CPU (no execution).")
    ap.add_argument("--print", dest="show", action="store_true", help="print every definition (nvFuser's own text)")
    ap.add_argument("--fuzz", type=int, default=300, help="fuzz programs to include (default 300)")
    ap.add_argument("--fuzz-seed", type=int, default=0)
    ap.add_argument("--only", choices=("seed", "bench", "fuzz"), action="append", help="restrict to these sets")
    opts = ap.parse_args(argv)

    from fusion_alias.backends import nvfuser as nvb

    nv = nvb.frontend()
    print(f"nvfuser_direct {nv.version()} with torch {torch.__version__} (CUDA available: {torch.cuda.is_available()})", flush=True)
    sets = opts.only or ["seed", "bench", "fuzz"]
    start = time.perf_counter()
    total_fail = total_built = 0
    for which in sets:
        t0 = time.perf_counter()
        programs = {
            "seed": seed_programs,
            "bench": bench_programs,
            "fuzz": lambda: fuzz_programs(opts.fuzz, opts.fuzz_seed),
        }[which]()
        outcomes, not_compiled = run(programs, nv, opts.show)
        built = sum(1 for o in outcomes if o.definitions and not o.error)
        nothing = sum(1 for o in outcomes if o.nothing)
        fallback = sum(1 for o in outcomes if not o.definitions and not o.error and not o.nothing)
        failed = sum(1 for o in outcomes if o.error)
        total_built += built
        total_fail += failed
        print(
            f"{which}: {len(programs)} programs, {len(outcomes)} regions: {built} built "
            f"({sum(o.definitions for o in outcomes)} definitions), {fallback} kept on torch (strided slice), "
            f"{nothing} with nothing to run (views only), "
            f"{failed} failed; {len(not_compiled)} programs raised on the reference backend "
            f"({time.perf_counter() - t0:.0f} s)",
            flush=True,
        )
        for name, error in not_compiled[:5]:
            print(f"    raised: {name}: {error}")
    print(f"time: {time.perf_counter() - start:.0f} s")
    print(f"nvfuser definitions: {total_built} regions built, {total_fail} failed")
    return 1 if total_fail else 0


if __name__ == "__main__":
    sys.exit(main())
