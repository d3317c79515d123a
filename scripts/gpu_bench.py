#!/usr/bin/env python
"""Short GPU timing: fusion_alias (nvFuser backend) vs eager vs torch.compile vs thunder.jit.

Run by scripts/gpu_check.sh on a CUDA machine; it appends a Markdown section
to the results file (default ``$OUT/gpu_results.md``, or
``./gpu-results/gpu_results.md`` when ``$OUT`` is unset) and prints it.

Cases, in this order (``--budget`` skips from the end):
* an Adam step over 8 parameters of N floats (fusion_alias.bench.programs.adam;
  default N = 2**20), in place;
* a KV-cache decode step: write one position of a (B, T, D) cache, then read
  the whole cache (bench.programs.kv_write_read and kv_two_caches);
* the seed programs of tests/programs.py on their 5x5 inputs ``(x, x[0, 0])``
  (launch-bound: these measure how many kernels and fusion breaks a call costs);
* the seed programs that accept it again at 2048x2048 (2**22 elements).

Systems: eager PyTorch, fusion_alias (backend="nvfuser"), torch.compile
(Inductor, compiled per case), and thunder.jit with its default executors
(nvFuser among them where Thunder's nvFuser executor loads; the results say
whether it did). Each is first checked against eager PyTorch on fresh copies
with the same aliasing (outputs and every mutated input), then timed with CUDA
events: W warm-up calls, then the median of I timed calls; inputs are reset
before each timed call, outside the timed window. One failing system or case
never stops the others: a crash is a result too.

``--cpu-dry-run`` runs the same on CPU (fusion_alias on the reference
backend, no torch.compile) to check this script without a GPU.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path[:0] = [REPO, os.path.join(REPO, "tests")]

import torch  # noqa: E402

DEVICE = "cuda"  # --cpu-dry-run switches to "cpu" (checks this script's logic; times nothing real)


def default_out() -> str:
    out = os.environ.get("OUT")
    folder = out if out else os.path.join(os.getcwd(), "gpu-results")
    return os.path.join(folder, "gpu_results.md")


# ---------------------------------------------------------------------------
# correctness and timing
# ---------------------------------------------------------------------------


def as_tuple(x):
    return x if isinstance(x, (tuple, list)) else (x,)


def flat_tensors(x):
    out = []
    for v in as_tuple(x):
        if isinstance(v, (tuple, list)):
            out.extend(flat_tensors(v))
        elif isinstance(v, torch.Tensor):
            out.append(v)
    return out


def compare(got, want) -> str:
    got, want = flat_tensors(got), flat_tensors(want)
    if len(got) != len(want):
        return f"WRONG ({len(got)} tensors, eager has {len(want)})"
    worst = 0.0
    for g, w in zip(got, want):
        if g.shape != w.shape:
            return f"WRONG (shape {tuple(g.shape)} vs {tuple(w.shape)})"
        try:
            torch.testing.assert_close(g, w, equal_nan=True)
        except AssertionError:
            diff = (g.double() - w.double()).abs().nan_to_num(float("inf"))
            worst = max(worst, float(diff.max()))
    return "ok" if worst == 0.0 else f"WRONG (max abs err {worst:.3g})"


def short(e: BaseException) -> str:
    msg = " ".join(str(e).split())
    return f"{type(e).__name__}: {msg[:110]}"


def sync():
    if DEVICE == "cuda":
        torch.cuda.synchronize()


def time_calls(fn, make_args, reset, warmup: int, iters: int) -> float:
    """Median milliseconds of ``fn(*args)`` with CUDA events; ``reset()`` runs untimed before each call."""
    args = make_args()
    for _ in range(warmup):
        reset()
        fn(*args)
    sync()
    times = []
    for _ in range(iters):
        reset()
        sync()
        if DEVICE != "cuda":
            t0 = time.perf_counter()
            fn(*args)
            times.append((time.perf_counter() - t0) * 1e3)
            continue
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn(*args)
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


# ---------------------------------------------------------------------------
# variants
# ---------------------------------------------------------------------------


def fusions_in(jitted) -> int | str:
    import thunder

    try:
        trace = thunder.last_traces(jitted)[-1]
        return sum(1 for b in trace.bound_symbols if b.sym.is_fusion)
    except Exception:
        return "?"


def variants(fn):
    import thunder

    import fusion_alias

    def fa():
        j = fusion_alias.jit(fn, backend="nvfuser" if DEVICE == "cuda" else "reference")
        return j, lambda: len(fusion_alias.regions(j))

    def th():
        j = thunder.jit(fn)
        return j, lambda: fusions_in(j)

    def tc():
        torch._dynamo.reset()
        return torch.compile(fn), lambda: "-"

    systems = {"fusion_alias": fa, "torch.compile": tc, "thunder": th}
    if DEVICE != "cuda":
        systems.pop("torch.compile")  # Inductor on CPU needs a C++ toolchain and minutes: not what is checked here
    return systems


# ---------------------------------------------------------------------------
# cases
# ---------------------------------------------------------------------------


class Case:
    def __init__(self, name, fn, fresh_state, args_of, numel):
        self.name = name
        self.fn = fn
        self.fresh_state = fresh_state  # () -> state (tensors)
        self.args_of = args_of  # state -> call arguments (views made here keep the aliasing)
        self.numel = numel


def _cuda_args(make_inputs, base):
    return [a.to(DEVICE) if isinstance(a, torch.Tensor) and a.device.type != DEVICE else a for a in make_inputs(base)]


def seed_cases(size):
    """The seed programs with ``make_inputs(base)``; tensors it makes apart from ``base`` are reset too."""
    from programs import SEED_PROGRAMS

    cases = []
    for fn, make_inputs, _ in SEED_PROGRAMS:
        base = torch.randn(size, generator=torch.Generator().manual_seed(0)).to(DEVICE)
        try:  # programs with a.view(5, 5) accept 5x5 only
            fn(*_cuda_args(make_inputs, base.clone()))
        except Exception:
            continue
        storage = base.untyped_storage().data_ptr()
        others = [
            a.clone()
            for a in _cuda_args(make_inputs, base)
            if isinstance(a, torch.Tensor) and a.untyped_storage().data_ptr() != storage
        ]

        def fresh_state(base=base, others=others):
            return [base.clone()] + [o.clone() for o in others]

        def args_of(state, make_inputs=make_inputs):
            args = _cuda_args(make_inputs, state[0])
            rest = iter(state[1:])
            own = state[0].untyped_storage().data_ptr()
            return tuple(
                next(rest) if isinstance(a, torch.Tensor) and a.untyped_storage().data_ptr() != own else a for a in args
            )

        cases.append(Case(f"{fn.__name__} {tuple(size)}", fn, fresh_state, args_of, base.numel()))
    return cases


def adam_cases(n_params, numel):
    from fusion_alias.bench.programs import adam

    gen = torch.Generator().manual_seed(0)
    init = [torch.randn(numel, generator=gen).to(DEVICE) for _ in range(4 * n_params)]
    for v in init[3 * n_params :]:
        v.abs_()  # second moments are non-negative

    def fresh_state():
        return [t.clone() for t in init]

    def args_of(state):
        n = n_params
        return (state[:n], state[n : 2 * n], state[2 * n : 3 * n], state[3 * n :])

    return [Case(f"adam step, {n_params} params x {numel}", adam, fresh_state, args_of, 4 * n_params * numel)]


def kv_cases(batch, length, dim):
    from fusion_alias.bench import programs

    gen = torch.Generator().manual_seed(0)

    def randn(*shape):
        return torch.randn(*shape, generator=gen).to(DEVICE)

    one = [randn(batch, length, dim), randn(batch, 1, dim), randn(batch, 1, dim)]
    two = [randn(batch, length, dim), randn(batch, length, dim)] + [randn(batch, 1, dim) for _ in range(3)]
    cases = []
    for fn, init in ((programs.kv_write_read, one), (programs.kv_two_caches, two)):

        def fresh_state(init=init):
            return [t.clone() for t in init]

        cases.append(Case(f"kv decode {fn.__name__} ({batch}, {length}, {dim})", fn, fresh_state, tuple, sum(t.numel() for t in init)))
    return cases


def run_case(case: Case, warmup: int, iters: int) -> dict:
    row = {"case": case.name, "numel": case.numel}
    # eager: reference result and time
    state_e = case.fresh_state()
    want = case.fn(*case.args_of(state_e))
    sync()
    want_state = [t.clone() for t in state_e]
    want = [t.clone() for t in flat_tensors(want)]
    row["eager"] = _timed(case, case.fn, warmup, iters)

    for label, make in variants(case.fn).items():
        try:
            jitted, count = make()
            state_j = case.fresh_state()
            got = jitted(*case.args_of(state_j))
            sync()
            verdict = compare(list(flat_tensors(got)) + state_j, want + want_state)
            row[label + "_correct"] = verdict
            row[label + "_regions"] = count()
            row[label] = _timed(case, jitted, warmup, iters)
        except Exception as e:  # a crash is a result too
            row[label + "_correct"] = "crash: " + short(e)
            row.setdefault(label + "_regions", "-")
            row.setdefault(label, None)
            if os.environ.get("GPU_BENCH_TRACEBACKS"):
                traceback.print_exc()
    return row


def _timed(case, fn, warmup, iters):
    state = case.fresh_state()
    originals = [t.clone() for t in state]
    args = case.args_of(state)

    def reset():
        for t, o in zip(state, originals):
            t.copy_(o)

    return time_calls(fn, lambda: args, reset, warmup, iters)


# ---------------------------------------------------------------------------
# report
# ---------------------------------------------------------------------------


def fmt_ms(v):
    return "-" if v is None else f"{v:.3f}"


def environment() -> list[str]:
    lines = []
    try:
        import thunder

        lines.append(f"- lightning-thunder {thunder.__version__}")
        from thunder.executors import nvfuserex

        lines.append(f"- Thunder's nvFuser executor available: {nvfuserex.nvfuserex is not None} (nvFuser {nvfuserex.nvfuser_version()})")
    except Exception as e:
        lines.append(f"- thunder: {short(e)}")
    from fusion_alias.backends import nvfuser as nvb

    lines.append(f"- fusion_alias nvFuser backend: {'available' if nvb.available() else nvb.missing()}")
    dev = torch.cuda.get_device_name(0) if DEVICE == "cuda" else "CPU (dry run: not a GPU result)"
    lines.append(f"- torch {torch.__version__}, CUDA {torch.version.cuda}, device {dev}")
    return lines


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=default_out())
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--large", type=int, default=2048, help="side of the large square inputs (2048 -> 2**22 elements)")
    ap.add_argument("--params", type=int, default=8, help="Adam: number of parameters")
    ap.add_argument("--numel", type=int, default=1 << 20, help="Adam: floats per parameter")
    ap.add_argument("--kv-batch", type=int, default=8)
    ap.add_argument("--kv-length", type=int, default=2048)
    ap.add_argument("--kv-dim", type=int, default=128)
    ap.add_argument("--budget", type=float, default=200.0, help="seconds; cases not started by then are skipped")
    ap.add_argument("--cpu-dry-run", action="store_true", help="run everything on CPU (reference backend) to check this script")
    opts = ap.parse_args()
    global DEVICE
    if opts.cpu_dry_run:
        DEVICE = "cpu"

    os.makedirs(os.path.dirname(os.path.abspath(opts.out)), exist_ok=True)
    start = time.perf_counter()
    report = Report(opts.out)  # written line by line: a timeout still leaves the finished rows
    report.add("", "## Benchmark (scripts/gpu_bench.py)", "")
    if DEVICE == "cuda" and not torch.cuda.is_available():
        report.add("No CUDA device: nothing timed.")
        return 1
    report.add(*environment())
    report.add(
        "",
        f"Median of {opts.iters} calls after {opts.warmup} warm-up calls, CUDA events; inputs reset before each call, "
        "outside the timed window. 'regions' counts fusion_alias's regions or Thunder's fusions in the last trace. "
        "'correct' compares outputs and every mutated input with eager PyTorch on fresh copies with the same aliasing.",
        "",
        "| case | elements | eager ms | fusion_alias ms | regions | fusion_alias correct | torch.compile ms | torch.compile correct | thunder ms | fusions | thunder correct |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    )
    cases = []
    # the optimizer before the large seed cases: the budget skips from the end
    makers = (
        lambda: adam_cases(opts.params, opts.numel),
        lambda: kv_cases(opts.kv_batch, opts.kv_length, opts.kv_dim),
        lambda: seed_cases((5, 5)),
        lambda: seed_cases((opts.large, opts.large)),
    )
    for make in makers:
        try:
            cases += make()
        except Exception as e:
            report.add(f"| (making cases failed: {short(e)}) | | | | | | | | | | |")
    skipped = []
    for case in cases:
        if time.perf_counter() - start > opts.budget:
            skipped.append(case.name)
            continue
        t0 = time.perf_counter()
        try:
            r = run_case(case, opts.warmup, opts.iters)
        except Exception as e:
            report.add(f"| {case.name} | {case.numel} | error: {short(e)} | | | | | | | | |")
            continue
        report.add(
            f"| {r['case']} | {r['numel']} | {fmt_ms(r['eager'])} | {fmt_ms(r.get('fusion_alias'))} | "
            f"{r.get('fusion_alias_regions', '-')} | {r.get('fusion_alias_correct', '-')} | "
            f"{fmt_ms(r.get('torch.compile'))} | {r.get('torch.compile_correct', '-')} | {fmt_ms(r.get('thunder'))} | "
            f"{r.get('thunder_regions', '-')} | {r.get('thunder_correct', '-')} |"
        )
        print(f"    ({case.name}: {time.perf_counter() - t0:.1f} s)", flush=True)
    if skipped:
        report.add("", f"Skipped for the {opts.budget:.0f} s budget: " + "; ".join(skipped))
    report.add("", f"Bench wall time: {time.perf_counter() - start:.1f} s")
    return 0


class Report:
    """Appends Markdown lines to the results file as they come, and echoes them."""

    def __init__(self, path):
        self.path = path

    def add(self, *lines):
        with open(self.path, "a") as fh:
            for line in lines:
                fh.write(line + "\n")
        for line in lines:
            print(line, flush=True)


if __name__ == "__main__":
    sys.exit(main())
