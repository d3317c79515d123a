"""Partition cost at scale, and the pass's share of a whole ``thunder.jit`` compile.

Synthetic traces
----------------
Built directly (no interpretation of Python): a ``TraceCtx`` under
``tracectx``, input proxies unpacked with ``prims.unpack_trivial`` as Thunder's
own computation traces are, then ``thunder.torch`` in-place ops called on the
proxies, which records the same composite bound symbols
(``ltorch.tanh_`` → ``prims.tanh``, ``prims.copy_``) a traced program has. The
size is counted in *flattened* bound symbols: the prims of the program's decomposition
(Note [the size counts every prim]).

* ``chain``: ``a.tanh_(); b.add_(1)`` repeated on two inputs. Aliased: ``a``
  and ``b`` may overlap, so every op is a region boundary (each write is read
  back through the other name). Not aliased: one region.
* ``wide``: ``p_i.add_(g_i, alpha=-lr)`` for thousands of parameters (many
  independent in-place updates). Aliased: all ``p_i`` in one memory group
  (what a guard that cannot separate them would say).
* ``views``: ``v_i = x_i[0]`` taken first for thousands of buffers, then every
  ``x_i.exp_()``, then every ``v_i * 2``, all returned: reads of views of
  written memory (replayed on the new values), two stages, and one symbol (the
  return) with thousands of arguments. Aliased: all ``x_i`` in one memory group.

Per size and variant, the figure reported (``total``) is the *whole* fusion
pass: ``executor.fusion_pass(trace)`` on the composite trace, as Thunder hands
it over (flattening, dropping ``update_aliases``, the user's in-place ops,
alias analysis, read substitution, DCE, graph, partition, and one fusion bsym
per region), plus the garbage collection that follows it (a ``gc.collect()``
right after the pass, while its result is alive, less one right before it:
the pass itself runs with the cyclic GC paused, so this is where the bill
for its objects comes). The
aliased variant is the pass's own view when Thunder reports aliased inputs:
every input may overlap every other. Next to it, the stages alone on the same
trace: alias analysis + read substitution + DCE (``prepare``'s ``analysis``),
graph building (``graph``) and partitioning. Next to them, Thunder's ``fuse_bound_symbols`` on the same
flattened trace (consecutive, ``thunder.jit``'s default, and dataflow), and
Thunder's own alias pass (``insert_alias_updates``) where it finishes in
reasonable time: it is quadratic or worse, so it is measured at small sizes and
extrapolated (marked ``~``) above them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
import contextlib
import gc
import math
import time

import thunder
import thunder.core.prims as prims
import thunder.torch as ltorch
from thunder.core import devices, dtypes
from thunder.core.langctxs import Languages, langctx
from thunder.core.proxies import TensorProxy
from thunder.core.trace import TraceCtx, from_trace, tracectx

import fusion_alias
from fusion_alias.aliasing import forget_flattened
from fusion_alias.executor import executor
from fusion_alias.partition import partition
from fusion_alias.bench.programs import Program
from fusion_alias.bench import regions as reg

KINDS = ("chain", "wide", "views")


@dataclass
class Synthetic:
    kind: str
    trace: TraceCtx  # top-level (composite) bound symbols, like a traced program
    flat: TraceCtx  # flattened to prims, dead ones included (Note [the size counts every prim])
    groups: list[list[str]]  # the inputs that may overlap in the aliased variant
    thunder_alias_indices: list[list[int]]
    build_seconds: float


def _proxy(name: str, shape=(8,)) -> TensorProxy:
    return TensorProxy(name, shape=shape, device=devices.cpu, dtype=dtypes.float32)


def _flat_size_of_update() -> int:
    """Flattened bound symbols of one ``p.add_(g, alpha=-lr)``."""
    trc = TraceCtx()
    with tracectx(trc), langctx(Languages.TORCH):
        p, g = _proxy("p"), _proxy("g")
        ltorch.add_(p, g, alpha=-0.1)
    return sum(len(_prims(b)) for b in trc.bound_symbols)


def _prims(bsym) -> list:
    """``bsym`` down to the prims of its decomposition (the leaves of its subsymbols), dead ones
    included: what the bench counts as a trace's size.

    Note [the size counts every prim]
    ---------------------------------
    The size was counted with fusion_alias's own flattening (``executor.flatten``). Since that
    leaves out a prim that computes a constant the trace inlined (executor.py, Note [a constant the
    trace already inlined]: the ``convert_element_type(2, float)`` of each ``v * 2``), counting with
    it would build a larger program for the same size (25k top-level symbols at "30k" ``views``
    instead of 21.4k), and no size would compare with an earlier session's. The bench counts the
    prims as Thunder decomposes the program instead, the same counts as before for the three kinds
    (the flattening claimed every composite there), and ``Synthetic.flat`` holds those prims.
    """
    subs = bsym.subsymbols
    if not subs:
        return [bsym]
    return [leaf for sub in subs for leaf in _prims(sub)]


def _row0(x: TensorProxy) -> TensorProxy:
    """``x[0]`` of an (8, 8) ``x``, as the prims a traced ``ltorch.getitem`` decomposes into (called
    bare, ``getitem`` also records a ``prims.shape`` the pass does not claim, which a traced
    program's does not have)."""
    return prims.squeeze(prims.slice_prim(x, [0, 0], [1, 8], [1, 1]), (0,))


def _flat_size_of_views() -> int:
    """Flattened bound symbols per buffer of the ``views`` kind (its unpack, view, write and read,
    and its argument of the return)."""
    trc = TraceCtx()
    with tracectx(trc), langctx(Languages.TORCH):
        x = _proxy("x", (8, 8))
        v = _row0(x)
        ltorch.exp_(x)
        ltorch.mul(v, 2)
    return 1 + sum(len(_prims(b)) for b in trc.bound_symbols)


def build(kind: str, size: int) -> Synthetic:
    """A synthetic trace of ``kind`` with at least ``size`` flattened bound symbols."""
    start = time.perf_counter()
    trc = TraceCtx()
    flat_count = 0

    def record_flat(first: int) -> None:
        nonlocal flat_count
        for b in trc.bound_symbols[first:]:
            flat_count += len(_prims(b))

    with tracectx(trc), langctx(Languages.TORCH):
        if kind == "chain":
            a, b = _proxy("a"), _proxy("b")
            args = [a, b]
            for p in args:
                prims.unpack_trivial(p, name=p.name)
            flat_count = 2
            while flat_count < size:
                first = len(trc.bound_symbols)
                ltorch.tanh_(a)
                ltorch.add_(b, 1)
                record_flat(first)
            groups = [["a", "b"]]
            indices = [[0, 1]]
        elif kind == "wide":
            per_update = 2 + _flat_size_of_update()  # two unpacks + the update's prims
            m = max(1, math.ceil((size - 1) / per_update))
            params = [_proxy(f"p{i}") for i in range(m)]
            grads = [_proxy(f"g{i}") for i in range(m)]
            args = params + grads
            for p in args:
                prims.unpack_trivial(p, name=p.name)
            flat_count = len(args)
            for i in range(m):
                first = len(trc.bound_symbols)
                ltorch.add_(params[i], grads[i], alpha=-0.1)
                record_flat(first)
                if flat_count >= size:
                    break
            groups = [[p.name for p in params]]
            indices = [list(range(m))]
        elif kind == "views":
            per_buffer = _flat_size_of_views()
            m = max(1, math.ceil((size - 1) / per_buffer))
            args = [_proxy(f"x{i}", (8, 8)) for i in range(m)]
            for p in args:
                prims.unpack_trivial(p, name=p.name)
            views = [_row0(x) for x in args]
            for x in args:
                ltorch.exp_(x)
            results = [ltorch.mul(v, 2) for v in views]
            record_flat(0)
            groups = [[p.name for p in args]]
            indices = [list(range(m))]
        else:
            raise ValueError(f"unknown synthetic kind {kind!r}")
        trc.args = args
        prims.python_return(tuple(results) if kind == "views" else tuple(args[:2]))
    flat = from_trace(trc)
    flat.bound_symbols = [leaf for b in trc.bound_symbols for leaf in _prims(b)]
    return Synthetic(kind, trc, flat, groups, indices, time.perf_counter() - start)


@dataclass
class ScaleRow:
    kind: str
    aliased: bool
    size: int  # flattened bound symbols
    top_level: int
    regions: int = 0
    analysis: float = 0.0
    graph: float = 0.0
    partition: float = 0.0
    thunder_consecutive: float | None = None
    thunder_dataflow: float | None = None
    name_walk: float | None = None  # :func:`name_walk` over the flattened trace (a floor for walks by name)
    thunder_alias_pass: float | None = None
    thunder_alias_pass_estimated: bool = False
    thunder_regions: int | None = None
    thunder_alias_pass_exponent: float | None = None  # fitted on the sizes it was measured at
    skipped: bool = False  # not run at this size: the stage times are extrapolated
    whole_pass: float = 0.0  # executor.fusion_pass(trace), end to end
    gc_after: float = 0.0  # the gc.collect() right after it
    gc_before: float = 0.0  # a gc.collect() right before it (the heap without the pass's objects)
    runs: int = 1  # measurements taken, each on a freshly built trace; the row is the fastest
    first_total: float | None = None  # ``total`` of the first of them (Note [every size measured alike])

    @property
    def total(self) -> float:
        """The whole fusion pass, and the garbage collection its objects cost: the collection
        after it less one just before it (which scans the trace and the rest of the heap)."""
        return self.whole_pass + max(0.0, self.gc_after - self.gc_before)

    @property
    def stages(self) -> float:
        return self.analysis + self.graph + self.partition


def _timed(fn):
    gc.collect()
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


@contextlib.contextmanager
def _thunder_reports(aliased: bool):
    """Inside the pass, Thunder's cache info says whether the arguments alias (what
    ``thunder.jit`` tells the fusion pass): "" for none; otherwise any two may overlap."""
    info = {} if aliased else {"alias_tensor_indices": ""}
    token = thunder._cache_info_ctx.set(info)
    try:
        yield
    finally:
        thunder._cache_info_ctx.reset(token)


def time_fusion_pass(trace: TraceCtx, aliased: bool) -> tuple[object, float, float, float]:
    """(the fused trace, seconds of ``executor.fusion_pass(trace)``, seconds of the gc.collect()
    after it, seconds of a gc.collect() just before it: what a full collection costs anyway)."""
    gc.collect()
    t0 = time.perf_counter()
    gc.collect()
    before = time.perf_counter() - t0
    with _thunder_reports(aliased):
        t0 = time.perf_counter()
        fused = executor.fusion_pass(trace)
        t1 = time.perf_counter()
    gc.collect()
    return fused, t1 - t0, time.perf_counter() - t1, before


def _drop_what_the_pass_kept() -> None:
    """Note [each measurement starts from a clean heap]: ``executor.prepare`` alone (the stage
    breakdown) leaves its flattened-argument cache filled (``fusion_pass`` empties it at its end),
    and the executor keeps the last pass's region specs until the next pass starts. Both hold the
    trace just measured: the next measurement then ran beside ~450k stale objects (a 30k trace's)
    and freed the last pass's regions inside its own timed pass. A compile never has the first
    (it calls ``fusion_pass``), and the second only frees regions a cached program still holds."""
    forget_flattened()
    executor._regions = {}


def measure_in_fresh_process(kind: str, size: int, aliased: bool) -> ScaleRow:
    """:func:`measure_synthetic` of a trace built in a new Python process (``scale_point.py``).

    Note [each point in a fresh process]
    ------------------------------------
    Measured in one process, a point ran after every point before it: by the 100k ``views``
    trace the process had built, passed and freed fifteen traces of up to 100k symbols, and the
    pass's new objects land among what those left (our reading of why it is slower: later walks
    miss the cache more). At 54a2ffd, quiet machine, the bench's 100k rows in one process against
    fresh ones were 2.00 against 1.86 s (views, no alias), 1.82 against 1.61 s (wide, aliased),
    1.41 against 1.30 s (wide, no alias), 1.69 against 1.73 s (chain, no alias, run first); three
    100k ``wide`` passes in a row in one process, each on a new trace, 1.36, 1.46, 1.39 s. The
    sizes did not run alike, the bias Note [every size measured alike] removed for the number of
    runs. Each measurement now runs in a process of its own, started the same way (imports, then
    the trace built, then the pass), as a program's first compile in a process. The one-process
    figures are still there (``python -m fusion_alias.bench --in-process``); docs/benchmarks.md
    gives both (the growth exponent bound is missed either way).
    """
    import json
    import os
    import subprocess
    import sys

    import fusion_alias as package

    root = os.path.dirname(os.path.dirname(os.path.abspath(package.__file__)))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")])))
    done = subprocess.run(
        [sys.executable, "-m", "fusion_alias.bench.scale_point", kind, str(size), "1" if aliased else "0"],
        capture_output=True, text=True, env=env, check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"the scale point {kind} {size} aliased={aliased} failed:\n{done.stderr[-3000:]}")
    fields = json.loads(done.stdout.strip().splitlines()[-1])
    fields.pop("build_seconds", None)
    return ScaleRow(**fields)


def measure_synthetic(syn: Synthetic, aliased: bool, *, dataflow_limit: int = 20_000) -> ScaleRow:
    size = len(syn.flat.bound_symbols)
    row = ScaleRow(syn.kind, aliased, size, len(syn.trace.bound_symbols))
    groups = [[p.name for p in syn.trace.args]] if aliased else []
    # fusion_alias: the whole pass on the top-level trace, first (a fresh trace, as in a compile)
    fused, row.whole_pass, row.gc_after, row.gc_before = time_fusion_pass(syn.trace, aliased)
    row.regions = sum(1 for b in fused.bound_symbols if b.sym.is_fusion)
    del fused
    # ... then its stages alone, for the breakdown
    prep = executor.prepare(syn.trace, input_groups=groups)
    part, row.partition = _timed(lambda: partition(prep.bsyms, prep.edges, prep.is_fusible))  # as the pass does
    row.analysis, row.graph = prep.seconds["analysis"], prep.seconds["graph"]
    del prep, part
    _drop_what_the_pass_kept()
    if not aliased:  # Thunder's grouping does not see aliasing without its alias pass
        from thunder.executors.data_dependent_partition import consecutive_fusion, dataflow_fusion

        groups_c, row.thunder_consecutive = _timed(lambda: consecutive_fusion(syn.flat, reg._merge))
        row.thunder_regions = reg.count_thunder_groups(groups_c)
        _, row.name_walk = _timed(lambda: name_walk(syn.flat.bound_symbols))
        if size <= dataflow_limit:
            _, row.thunder_dataflow = _timed(lambda: dataflow_fusion(syn.flat, reg._merge))
    return row


def name_walk(bsyms) -> int:
    """Each symbol's tensor arguments looked up by name among the outputs of the symbols before it: the
    data-edge walk every pass over a trace makes, and nothing else (how many arguments had a producer).

    Note [a walk by name is not linear here]
    ----------------------------------------
    Our pass looks names up in dicts in every stage (producers, memory groups, views, substitutions). This
    walk is the least any of them does, one dict of every output name, so its growth exponent is the floor
    for a stage that looks names up, on this machine: between 30k and 100k symbols the dict outgrows the
    core's 2 MiB L2 cache, and each lookup misses. Measured at 36749b7 (fresh processes, best of three,
    one other process running): 1.21-1.37 across the three traces, where Thunder's consecutive grouping (no
    lookup by name) grows at 1.00-1.03, and the same walk over names interned once to integers (lists
    indexed by them) at 1.04. The bench's exponent table shows it beside the pass's.
    """
    producer: dict[str, int] = {}
    found = 0
    for i, b in enumerate(bsyms):
        for a in b.args:
            if type(a) is TensorProxy and a._name in producer:
                found += 1
        out = b.output
        if type(out) is TensorProxy:
            producer.setdefault(out._name, i)
        elif type(out) in (tuple, list):
            for o in out:
                if type(o) is TensorProxy:
                    producer.setdefault(o._name, i)
    return found


def thunder_alias_pass_seconds(kind: str, sizes, *, budget_s: float) -> dict[int, tuple[float, bool, float | None]]:
    """Thunder's ``insert_alias_updates`` on the aliased synthetic trace.

    size -> (seconds, estimated, growth exponent between the two largest sizes measured).
    Sizes 250 and 500 are measured first (when below ``sizes``) to fit the exponent.
    """
    from thunder.core.update_aliases import insert_alias_updates

    out: dict[int, tuple[float, bool]] = {}
    probe = [s for s in (250, 500) if s < min(sizes)]
    measured: list[tuple[int, float]] = []
    spent = 0.0
    for size in sorted(set(probe) | set(sizes)):
        predicted = _extrapolate(measured, size) if len(measured) >= 2 else 0.0
        if spent + predicted > budget_s:
            out[size] = (predicted, True)
            continue
        syn = build(kind, size)
        _, secs = _timed(lambda: insert_alias_updates(syn.trace, syn.thunder_alias_indices))
        spent += secs
        measured.append((len(syn.flat.bound_symbols), secs))
        out[size] = (secs, False)
    k = slope(*measured[-2], *measured[-1]) if len(measured) >= 2 else None
    return {s: v + (k,) for s, v in out.items() if s in sizes}


def _extrapolate(points: list[tuple[int, float]], size: int) -> float:
    (n1, t1), (n2, t2) = points[-2], points[-1]
    k = slope(n1, t1, n2, t2) or 2.0
    return t2 * (size / n2) ** k


def slope(n1: float, t1: float, n2: float, t2: float) -> float | None:
    """The log-log slope between two (size, time) points: the growth exponent."""
    if t1 <= 0 or t2 <= 0 or n1 == n2:
        return None
    return math.log(t2 / t1) / math.log(n2 / n1)


def _predict(points: list[tuple[int, float]], size: int) -> float | None:
    """Time at ``size`` from the last two measured points (exponent 1 from a single one)."""
    if not points:
        return None
    if len(points) == 1:
        n, t = points[0]
        return t * size / n
    return _extrapolate(points, size)


def run_scale(
    sizes,
    *,
    alias_pass_budget_s: float = 20.0,
    max_measure_s: float = 90.0,
    repeat_below_s: float = 2.0,
    fresh_processes: bool = True,
    log=print,
) -> list[ScaleRow]:
    """Measure every kind and variant at every size.

    A (kind, variant) whose time at the next size, extrapolated from the last
    two, exceeds ``max_measure_s`` is not run there: its row is marked
    ``skipped`` and holds the extrapolated stage times. Every measurement is
    the first pass over a freshly built trace (as in a real compile), after a
    ``gc.collect()``; those under ``repeat_below_s`` are taken three times and
    the fastest kept (Note [every size measured alike]). With ``fresh_processes``
    (the default), each measurement runs in a new Python process
    (Note [each point in a fresh process]); else all run in this one.

    Note [every size measured alike]
    --------------------------------
    The growth exponent compares two sizes, so both must be measured the same way. The bench
    took the best of three runs below 2 s and one run above: at 100k symbols a pass of about
    2 s was one sample against the best of three at 30k, which biased the exponent up by the
    noise of one run (two runs of the same 100k pass on a quiet machine: 1.83 s and 2.27 s).
    ``python -m fusion_alias.bench`` now passes a bound above every size it runs (10 s), so each
    row is the fastest of three first passes over freshly built traces; the table shows the
    first run's total beside it, and the number of runs.
    """
    rows: list[ScaleRow] = []
    for kind in KINDS:
        alias_pass = thunder_alias_pass_seconds(kind, sizes, budget_s=alias_pass_budget_s)
        history: dict[bool, list[ScaleRow]] = {False: [], True: []}
        for size in sizes:
            predicted = {
                a: _predict([(r.size, r.total) for r in history[a]], size) for a in (False, True)
            }
            run = {a: predicted[a] is None or predicted[a] <= max_measure_s for a in (False, True)}
            # (here: the trace measured in this process, or the one whose Thunder grouping a skipped row shows)
            needs_trace = (not fresh_processes and any(run.values())) or (
                not run[False] and (any(run.values()) or size <= 20_000))
            syn = build(kind, size) if needs_trace else None
            if syn is not None:
                log(f"  {kind} {size}: built {len(syn.flat.bound_symbols)} bsyms in {syn.build_seconds:.1f} s")
            for aliased in (False, True):
                if run[aliased]:
                    if fresh_processes:
                        measure = lambda: measure_in_fresh_process(kind, size, aliased)  # noqa: E731
                    else:
                        measure = lambda: measure_synthetic(syn if syn is not None else build(kind, size), aliased)  # noqa: E731
                    row = measure()
                    first, runs = row.total, 1
                    # Note [every size measured alike]: best of three first runs, each on a freshly built trace
                    for _ in range(2 if row.total < repeat_below_s else 0):
                        syn = None  # (in this process: a new trace for each run)
                        again = measure()
                        runs += 1
                        if again.total < row.total:
                            row = again
                    row.runs, row.first_total = runs, first
                    history[aliased].append(row)
                    log(
                        f"    aliased={aliased}: whole pass {row.whole_pass:.3f} s + gc after {row.gc_after:.3f} s; "
                        f"stages: analysis {row.analysis:.3f} s, graph {row.graph:.3f} s, "
                        f"partition {row.partition:.3f} s; {row.regions} regions"
                    )
                else:
                    row = _extrapolated_row(kind, aliased, size, history[aliased])
                    log(f"    aliased={aliased}: skipped, extrapolated {row.total:.0f} s > {max_measure_s:g} s")
                    if syn is not None and not aliased:
                        from thunder.executors.data_dependent_partition import consecutive_fusion

                        _, row.thunder_consecutive = _timed(lambda: consecutive_fusion(syn.flat, reg._merge))
                if aliased:
                    (
                        row.thunder_alias_pass,
                        row.thunder_alias_pass_estimated,
                        row.thunder_alias_pass_exponent,
                    ) = alias_pass[size]
                rows.append(row)
            del syn
            gc.collect()
    return rows


def _extrapolated_row(kind: str, aliased: bool, size: int, history: list[ScaleRow]) -> ScaleRow:
    row = ScaleRow(kind, aliased, size, 0, skipped=True)
    for attr in ("analysis", "graph", "partition", "whole_pass", "gc_after", "gc_before"):
        setattr(row, attr, _predict([(r.size, getattr(r, attr)) for r in history], size) or 0.0)
    return row


def exponents(rows: list[ScaleRow], attr: str = "total") -> dict[tuple[str, bool], float | None]:
    """Per (kind, aliased): growth exponent between the two largest sizes."""
    out = {}
    for key in {(r.kind, r.aliased) for r in rows}:
        pts = sorted((r.size, getattr(r, attr)) for r in rows if (r.kind, r.aliased) == key)
        out[key] = slope(*pts[-2], *pts[-1]) if len(pts) >= 2 else None
    return out


def profile_largest(kind: str, size: int, aliased: bool = True, top: int = 12, sort: str = "tottime") -> str:
    """cProfile of the whole fusion pass on one synthetic trace: where the time goes."""
    import cProfile
    import io
    import pstats

    syn = build(kind, size)
    gc.collect()
    pr = cProfile.Profile()
    with _thunder_reports(aliased):
        pr.enable()
        executor.fusion_pass(syn.trace)
        pr.disable()
    buf = io.StringIO()
    pstats.Stats(pr, stream=buf).sort_stats(sort).print_stats(top)
    return buf.getvalue()


# -- compile share ---------------------------------------------------------------------


@dataclass
class CompileRow:
    name: str
    first_call: float  # wall time of the first call of the fusion_alias.jit function
    pass_seconds: float  # executor.last_pass_seconds
    refuse_seconds: float  # fuse() calls outside the pass (Thunder's update_fusion_call_ctx)
    regions: int
    trace_lines: int = 0
    thunder_default_first_call: float | None = None
    thunder_default_error: str = ""
    extra: dict = field(default_factory=dict)

    @property
    def share(self) -> float:
        return self.pass_seconds / self.first_call if self.first_call else float("nan")

    @property
    def share_with_refuse(self) -> float:
        return (self.pass_seconds + self.refuse_seconds) / self.first_call if self.first_call else float("nan")


class _FuseTimer:
    """Times executor.fuse calls made outside fusion_pass (an instance attribute shadows the method)."""

    def __init__(self):
        self.outside = 0.0
        self._in_pass = False

    def __enter__(self):
        fuse = type(executor).fuse.__get__(executor)
        fusion_pass = type(executor).fusion_pass.__get__(executor)

        def timed_fuse(region, counter):
            t0 = time.perf_counter()
            try:
                return fuse(region, counter)
            finally:
                if not self._in_pass:
                    self.outside += time.perf_counter() - t0

        def marked_pass(trace):
            self._in_pass = True
            try:
                return fusion_pass(trace)
            finally:
                self._in_pass = False

        executor.fuse = timed_fuse
        executor.fusion_pass = marked_pass
        return self

    def __exit__(self, *exc):
        executor.__dict__.pop("fuse", None)
        executor.__dict__.pop("fusion_pass", None)
        return False


def compile_share(prog: Program, *, thunder_default: bool = False, thunder_inputs=None) -> CompileRow:
    """First-call time of ``fusion_alias.jit(prog.fn)`` and the pass's part of it.

    With ``thunder_default``, also the first call of ``thunder.jit(prog.fn)``
    (default options, Thunder's alias pass on) on ``thunder_inputs(0)``
    (default: the program's own inputs).
    """
    args = prog.make_inputs(0)
    jitted = fusion_alias.jit(prog.fn, backend="reference")
    gc.collect()
    with _FuseTimer() as ft:
        t0 = time.perf_counter()
        jitted(*args)
        first = time.perf_counter() - t0
    trace = thunder.last_traces(jitted)[0]
    row = CompileRow(
        prog.name,
        first,
        executor.last_pass_seconds,
        ft.outside,
        len(fusion_alias.regions(jitted)),
        trace_lines=len(trace.bound_symbols),
    )
    if thunder_default:
        jfn = thunder.jit(prog.fn)
        args = (thunder_inputs or prog.make_inputs)(0)
        gc.collect()
        t0 = time.perf_counter()
        try:
            jfn(*args)
            row.thunder_default_first_call = time.perf_counter() - t0
        except Exception as e:
            row.thunder_default_error = f"{type(e).__name__}: {str(e).splitlines()[0][:120]}"
            row.thunder_default_first_call = time.perf_counter() - t0
    return row
