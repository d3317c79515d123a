"""Command line: ``python -m fusion_alias.bench [--quick] [--out DIR]``."""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
import warnings

FULL_SIZES = (1_000, 10_000, 100_000)
QUICK_SIZES = (1_000, 10_000)
QUICK_COMPILE = ("f", "h", "tanh_pow4")


def _commit() -> str:
    import subprocess

    sha = os.environ.get("FUSION_ALIAS_COMMIT", "")
    if not sha:
        try:
            here = os.path.dirname(os.path.abspath(__file__))
            sha = subprocess.run(
                ["git", "-C", here, "rev-parse", "--short", "HEAD"], capture_output=True, text=True, timeout=5
            ).stdout.strip()
        except Exception:
            sha = ""
    return f"fusion_alias at commit {sha}, " if sha else ""


def _header(quick: bool) -> str:
    import torch
    import thunder

    return "\n".join(
        [
            "# fusion_alias benchmark" + (" (--quick)" if quick else ""),
            "",
            f"{_commit()}CPU only, reference backend. torch {torch.__version__}, thunder {thunder.__version__}, "
            f"Python {platform.python_version()}, {os.cpu_count()} CPUs ({platform.machine()}), "
            f"{time.strftime('%Y-%m-%d %H:%M')}.",
        ]
    )


def run(
    *,
    quick: bool = False,
    out: str | None = "bench-results",
    sizes=None,
    programs=None,
    max_nodes: int = 25,
    sections=("regions", "scale", "compile"),
    profile: bool | None = None,
    in_process: bool = False,
    log=print,
) -> tuple[str, str]:
    """Run the benchmark; return (markdown report, summary line). Writes files when ``out`` is set."""
    from fusion_alias.bench import programs as P
    from fusion_alias.bench import regions as R
    from fusion_alias.bench import report
    from fusion_alias.bench import scale as S

    t_start = time.perf_counter()
    sizes = tuple(sizes or (QUICK_SIZES if quick else FULL_SIZES))
    largest = max(sizes)
    md = [_header(quick)]
    region_rows, scale_rows, compile_rows = [], [], []
    seconds = {}

    if "regions" in sections:
        t0 = time.perf_counter()
        progs = P.by_name(programs) if programs else P.SUITE
        log(f"[1/3] region quality on {len(progs)} programs")
        for prog in progs:
            row = R.measure_all([prog], max_nodes=max_nodes, search_seconds=5.0 if quick else 20.0)[0]
            region_rows.append(row)
            log(
                f"  {row.name}: fusion_alias {row.fusion_alias}, thunder {row.thunder}, optimum "
                f"{row.optimum if row.optimum is not None else 'n/a'}{'  ERROR ' + row.error.splitlines()[0] if row.error else ''}"
            )
        seconds["regions"] = time.perf_counter() - t0
        md += ["", "## 1. Region quality", "", report.region_table(region_rows, max_nodes)]

    if "scale" in sections:
        t0 = time.perf_counter()
        log(f"[2/3] partition cost on synthetic traces of {', '.join(str(s) for s in sizes)} bsyms")
        load_before = _load_average()
        scale_rows = S.run_scale(
            sizes,
            alias_pass_budget_s=6.0 if quick else 30.0,
            max_measure_s=30.0 if quick else 90.0,
            repeat_below_s=0.5 if quick else 10.0,  # (scale.py, Note [every size measured alike])
            fresh_processes=not in_process,  # (scale.py, Note [each point in a fresh process])
            log=log,
        )
        md += [
            "",
            "## 2. Partition cost at scale",
            "",
            "Synthetic traces (see `fusion_alias/bench/scale.py`): *chain* = `a.tanh_(); b.add_(1)` repeated on two "
            "inputs (aliased: `a`, `b` may overlap); *wide* = `p_i.add_(g_i, alpha=-lr)` over many parameters "
            "(aliased: every input may overlap every other). *bsyms* = flattened bound symbols (the partitioner's nodes); "
            "*top-level* = the trace's own bound symbols. *whole pass* = `executor.fusion_pass(trace)` end to end "
            "(flattening, `update_aliases` dropped, the user's in-place ops, analysis, graph, partition, fusion bsyms), "
            "*gc after − before* = the `gc.collect()` right after it less one right before it (the pass runs with the "
            "cyclic GC paused: this is what collecting its objects costs), **total** = whole pass + that difference (the figure the targets use; "
            "aliased = every input may overlap every other, as when Thunder reports aliased arguments). The stages "
            "alone: *analysis* = alias analysis + read substitution + DCE, *graph* = dependency graph (as arrays, `graph.build_edges`), "
            "*partition* = stage assignment. *runs* = first passes measured, each over a freshly built trace"
            + (" in this one process" if in_process else ", each in a new Python process (`scale.py`, Note [each point in a fresh process])")
            + ": the row is the fastest, *first run* its first one's total (`scale.py`, Note [every size measured alike]). "
            "Thunder: `fuse_bound_symbols` on the same flattened trace (consecutive = `thunder.jit`'s default; "
            "dataflow only up to 20k), and Thunder's own alias pass `insert_alias_updates` on the aliased trace, "
            "measured while it fits its time budget and extrapolated (~) above.",
            "",
            report.scale_table(scale_rows),
            "",
            f"Machine: {os.cpu_count()} CPUs; load average (1 min) {load_before:.2f} before these runs, "
            f"{_load_average():.2f} after (the figures are wall time: other work on the machine inflates them).",
            "",
            "Growth exponents (log-log slope between the two largest sizes run; *thunder consecutive*: Thunder's "
            "grouping of the same trace, one walk that makes few objects, a reference for this machine's linear walk; "
            "*name walk*: each argument looked up by name among earlier outputs, the least a stage that looks names up "
            "does, `scale.py`, Note [a walk by name is not linear here]):",
            "",
            report.exponent_table(scale_rows),
        ]
        seconds["scale"] = time.perf_counter() - t0

        want_profile = (not quick) if profile is None else profile
        if want_profile:
            md += _profiles(S, scale_rows, largest, big=not quick, log=log)

    if "compile" in sections:
        t0 = time.perf_counter()
        progs = P.by_name(QUICK_COMPILE) if quick else list(P.SEED)
        progs = progs + [P.long_program(1000)]
        log(f"[3/3] compile share on {len(progs)} programs")
        for prog in progs:
            is_long = prog.name.startswith("long")
            row = S.compile_share(prog, thunder_default=is_long and not quick, thunder_inputs=P.long_independent_inputs if is_long else None)
            compile_rows.append(row)
            log(f"  {row.name}: first call {row.first_call:.3f} s, pass {row.pass_seconds:.4f} s ({100 * row.share:.1f}%)")
        seconds["compile"] = time.perf_counter() - t0
        md += [
            "",
            "## 3. The pass's share of a `thunder.jit` compile",
            "",
            report.compile_table(compile_rows),
        ]
        if not quick:
            md += [
                "",
                "*thunder.jit default*: `thunder.jit(fn)` with default options (its own alias pass on), first call, "
                "for the 1,000-line program with independent inputs (with the aliased ones Thunder's alias pass "
                "raises its reshape error).",
            ]

    summary = report.summary_line(region_rows, scale_rows, largest)
    md += ["", "## Targets", ""] + report.targets(region_rows, scale_rows, compile_rows, largest)
    total = time.perf_counter() - t_start
    md += [
        "",
        "Bench run time: " + ", ".join(f"{k} {v:.0f} s" for k, v in seconds.items()) + f"; total {total:.0f} s.",
        "",
        summary,
        "",
    ]
    markdown = "\n".join(md)
    if out:
        paths = report.write(out, markdown, region_rows, scale_rows)
        log("wrote " + ", ".join(paths))
    return markdown, summary


def _profiles(S, scale_rows, largest: int, *, big: bool, log) -> list[str]:
    """Where the time goes: cProfile of the slowest trace at <= 12k bsyms and (``big``) at the largest size."""
    md: list[str] = []
    run_rows = [r for r in scale_rows if not r.skipped and r.size <= 12_000]
    if run_rows:
        worst = max(run_rows, key=lambda r: r.total)
        log(f"  profiling {worst.kind} aliased={worst.aliased} at {worst.size} bsyms")
        text = S.profile_largest(worst.kind, worst.size, worst.aliased, top=14)
        md += [
            "",
            f"Where the time goes: cProfile of the whole fusion pass on the slowest trace at its size "
            f"({worst.kind}, {'aliased' if worst.aliased else 'no alias'}, {worst.size} bsyms), by own time "
            "(profiling inflates the times):",
            "",
            "```",
            _trim_profile(text),
            "```",
        ]
    big_rows = [r for r in scale_rows if not r.skipped and r.size >= largest * 0.95] if big else []
    if big_rows:
        slow = max(big_rows, key=lambda r: r.total)
        log(f"  profiling {slow.kind} aliased={slow.aliased} at {slow.size} bsyms")
        text = S.profile_largest(slow.kind, slow.size, slow.aliased, top=16)
        md += [
            "",
            f"The slowest trace run at {slow.size} bsyms ({slow.kind}, {'aliased' if slow.aliased else 'no alias'}), "
            "same profile:",
            "",
            "```",
            _trim_profile(text),
            "```",
            "",
            f"Garbage collection after the pass on that trace: {slow.gc_after:.2f} s, against {slow.gc_before:.2f} s "
            "for one just before it (the pass runs with the cyclic GC paused; the collection after it pays for "
            "its objects).",
        ]
    return md


def _trim_profile(text: str) -> str:
    lines = [ln.rstrip() for ln in text.splitlines() if ln.strip()]
    keep = []
    for ln in lines:
        ln = ln.replace(sys.prefix + "/lib/python3.11/site-packages/", "")
        ln = ln.replace(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))) + "/", "")
        keep.append(ln)
    return "\n".join(keep)


def _load_average() -> float:
    return os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m fusion_alias.bench", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="sizes 1k and 10k, fewer compile-share programs (< 3 min)")
    parser.add_argument("--out", default="bench-results", help="folder for bench.md, regions.png, scale.png")
    parser.add_argument("--sizes", type=lambda s: [int(x) for x in s.split(",")], help="synthetic sizes, e.g. 1000,10000")
    parser.add_argument("--programs", type=lambda s: s.split(","), help="region-quality programs (names), default all")
    parser.add_argument("--max-nodes", type=int, default=25, help="exact optimum search up to this many fusible nodes")
    parser.add_argument("--only", choices=["regions", "scale", "compile"], action="append", help="run only these parts")
    parser.add_argument("--profile", action=argparse.BooleanOptionalAction, default=None, help="cProfile the slowest trace")
    parser.add_argument("--in-process", action="store_true",
                        help="measure every scale point in this process, not each in a new one (scale.py, "
                             "Note [each point in a fresh process])")
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore")
    markdown, summary = run(
        quick=args.quick,
        out=args.out,
        sizes=args.sizes,
        programs=args.programs,
        max_nodes=args.max_nodes,
        sections=tuple(args.only) if args.only else ("regions", "scale", "compile"),
        profile=args.profile,
        in_process=args.in_process,
        log=lambda s: print(s, file=sys.stderr, flush=True),
    )
    print(markdown.rstrip("\n").rsplit("\n", 1)[0])
    print(summary, flush=True)
    return 0
