"""Benchmark of the overlap guard (not a test).

Run ``python -m fusion_alias.bench_guard [--out DIR] [--pairs N]``.

Prints a markdown report:

* the per-call cost of :func:`fusion_alias.components.overlap_components` on 2, 8
  and 64 tensor inputs, for three alias structures (independent tensors;
  interleaved, non-overlapping views of one storage; overlapping views of one
  storage).  "warm" is the steady state of a per-call guard (the cluster
  answer is cached by relative layout); "cold" clears that cache before every
  call, i.e. it is the first call with a new structure;
* next to it Thunder's own per-call cost for a ``thunder.jit``-ed trivial
  function taking the same number of tensors (``args[0] + 1``): the total
  time of a cached call, the eager time of the same function, and their
  difference (Thunder's overhead);
* the cold cost (first call with a new structure) for many interleaved views
  of one buffer (columns ``base[:, k]`` of a ``(16, m)`` tensor, m = 256 and
  1024; with and without a row ``base[3]`` that joins them all), and the
  components of random sets of views sharing a few layouts against
  ``numpy.shares_memory`` pairwise (exact);
* false positives / negatives of :func:`fusion_alias.overlap.may_overlap`
  (default ``max_work``) against ``numpy.shares_memory(..., max_work=None)``
  (exact) on random pairs of strided views of one buffer, and how often the
  work cap was hit.

With ``--out DIR`` the report is also written to ``DIR/guard.md``.
"""

from __future__ import annotations

import argparse
import collections
import os
import platform
import random
import sys
import time
import timeit
import warnings

import numpy as np
import torch

from fusion_alias import components as comp
from fusion_alias import overlap as ov

SIZES = (2, 8, 64)


def _per_call_us(fn, min_total_s: float = 0.2, repeat: int = 5) -> float:
    """Best-of-``repeat`` mean time of ``fn()`` in microseconds."""
    timer = timeit.Timer(fn)
    number, _ = timer.autorange()
    number = max(number, int(number * min_total_s / 0.2))
    return min(timer.repeat(repeat=repeat, number=number)) / number * 1e6


def _cases(n: int) -> dict[str, list[torch.Tensor]]:
    base_i = torch.zeros(16, n)
    base_o = torch.zeros(n + 16)
    return {
        "independent": [torch.zeros(16) for _ in range(n)],
        # column k of a (16, n) tensor: byte ranges all overlap, bytes do not
        "interleaved": [base_i[:, k] for k in range(n)],
        # sliding windows base[k:k+16]: one component
        "overlapping": [base_o[k : k + 16] for k in range(n)],
    }


def guard_costs() -> dict[tuple[str, int], tuple[float, float, tuple[int, ...]]]:
    out = {}
    for n in SIZES:
        for name, ts in _cases(n).items():
            labels = comp.overlap_components(ts)
            warm = _per_call_us(lambda: comp.overlap_components(ts))

            def cold():
                comp.clear_cache()
                comp.overlap_components(ts)

            cold_us = _per_call_us(cold, min_total_s=0.1, repeat=3)
            out[(name, n)] = (warm, cold_us, labels)
    return out


def thunder_costs() -> dict[int, tuple[float, float]]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import thunder

    def f(*args):
        return args[0] + 1

    out = {}
    for n in SIZES:
        args = [torch.zeros(16) for _ in range(n)]
        jf = thunder.jit(f)
        for _ in range(3):  # compile, then populate caches
            jf(*args)
        jit_us = _per_call_us(lambda: jf(*args))
        eager_us = _per_call_us(lambda: f(*args))
        out[n] = (jit_us, eager_us)
    return out


# -- accuracy on random pairs ------------------------------------------------

_DTYPES = [torch.uint8, torch.int8, torch.int16, torch.float32, torch.int32, torch.float64]


def _random_view(rng: random.Random, buf: torch.Tensor, max_dim: int = 4, max_size: int = 6) -> torch.Tensor:
    while True:
        flat = buf.view(rng.choice(_DTYPES))
        n = flat.numel()
        nd = rng.randint(0, max_dim)
        sizes = [rng.choice((0,) + tuple(range(1, max_size + 1)) * 4) for _ in range(nd)]
        strides = [rng.choice((0, 1, 2, 3, rng.randint(1, 12), rng.randint(1, 64))) for _ in range(nd)]
        span = 0 if 0 in sizes else sum((s - 1) * t for s, t in zip(sizes, strides))
        if span < n:
            top = n - 1 - span
            off = rng.randint(0, min(top, 16)) if rng.random() < 0.7 else rng.randint(0, top)
            return torch.as_strided(flat, sizes, strides, off)


def accuracy(pairs: int, seed: int = 0) -> dict[str, object]:
    rng = random.Random(seed)
    buf = torch.zeros(1024, dtype=torch.uint8)
    fp = fn = cap = shared = 0
    stages: collections.Counter[str] = collections.Counter()
    max_work = 0
    t0 = time.perf_counter()
    for _ in range(pairs):
        a, b = _random_view(rng, buf), _random_view(rng, buf)
        ref = bool(np.shares_memory(a.numpy(), b.numpy(), max_work=None))
        v = ov.overlap_detail(a, b)
        shared += ref
        stages[v.stage] += 1
        max_work = max(max_work, v.work)
        cap += v.stage == "cap"
        fp += v.overlap and not ref
        fn += ref and not v.overlap
    return {
        "pairs": pairs,
        "sharing (numpy)": shared,
        "false positives": fp,
        "false negatives": fn,
        "cap hit": cap,
        "max work": max_work,
        "stages": dict(sorted(stages.items())),
        "seconds": time.perf_counter() - t0,
    }


def adversarial() -> list[tuple[str, object, float, float]]:
    """Views that interleave without touching: (case, verdict, ours ms, numpy ms)."""
    x = torch.zeros(1 << 22)
    out = []
    for strides, n in (((1000, 999, 998), 20), ((1000, 999, 998, 997), 20), ((1000, 999, 998, 997, 996), 12)):
        a = torch.as_strided(x, (n,) * len(strides), strides, 0)
        b = torch.as_strided(x, (n,) * len(strides), strides, 500)
        t0 = time.perf_counter()
        v = ov.overlap_detail(a, b)
        t1 = time.perf_counter()
        np.shares_memory(a.numpy(), b.numpy(), max_work=None)
        t2 = time.perf_counter()
        out.append((f"strides {strides}, {n} per dim, shift 500", v, (t1 - t0) * 1e3, (t2 - t1) * 1e3))
    return out


def many_views_cold() -> list[tuple[str, int, float, int]]:
    """(case, m, best cold ms, components) for m interleaved views of one buffer."""
    out = []
    for m in (256, 1024):
        base = torch.zeros(16, m)
        cols = [base[:, k] for k in range(m)]
        for case, ts in (("columns", cols), ("columns + one row", cols + [base[3]])):
            best = float("inf")
            for _ in range(3):
                comp.clear_cache()
                t0 = time.perf_counter()
                labels = comp.overlap_components(ts)
                best = min(best, time.perf_counter() - t0)
            out.append((case, m, best * 1e3, len(set(labels))))
    return out


def components_accuracy(sets: int, seed: int = 0) -> dict[str, int]:
    """overlap_components on random sets of views sharing few layouts vs numpy, pairwise."""
    rng = random.Random(seed)
    buf = torch.zeros(1024, dtype=torch.uint8)
    wrong = tensors = 0
    for _ in range(sets):
        layouts = [(_random_view(rng, buf), rng.choice((1, 2, 3, rng.randint(1, 8)))) for _ in range(rng.randint(1, 3))]
        ts = []
        for v, step in layouts:
            flat = buf.view(v.dtype)
            span = sum((n - 1) * abs(t) for n, t in zip(v.shape, v.stride())) if v.numel() else 0
            for k in range(rng.randint(2, 24)):
                off = v.storage_offset() + k * step
                if off + span < flat.numel():
                    ts.append(torch.as_strided(flat, v.shape, v.stride(), off))
        rng.shuffle(ts)
        arrays = [t.numpy() for t in ts]
        parent = list(range(len(ts)))

        def find(x):
            while parent[x] != x:
                x = parent[x]
            return x

        for i in range(len(ts)):
            for j in range(i + 1, len(ts)):
                if ts[i].numel() and ts[j].numel() and np.shares_memory(arrays[i], arrays[j], max_work=None):
                    ri, rj = find(i), find(j)
                    parent[max(ri, rj)] = min(ri, rj)
        comp.clear_cache()
        wrong += comp.overlap_components(ts) != tuple(find(i) for i in range(len(ts)))
        tensors += len(ts)
    return {"sets": sets, "tensors": tensors, "wrong": wrong}


def report(pairs: int) -> str:
    g = guard_costs()
    many = many_views_cold()
    comp = components_accuracy(300)
    th = thunder_costs()
    acc = accuracy(pairs)
    adv = adversarial()
    lines = [
        "# Overlap guard cost",
        "",
        f"torch {torch.__version__}, numpy {np.__version__}, Python {platform.python_version()}, "
        f"{platform.machine()}, {os.cpu_count()} CPUs; CPU tensors of 16 float32 each; "
        f"DEFAULT_MAX_WORK = {ov.DEFAULT_MAX_WORK}; load average at start {os.getloadavg()[0]:.1f} "
        "(times are best-of-5 means, so other load on the machine inflates them).",
        "",
        "Guard = `overlap_components(inputs)`; warm = steady state (cluster answer cached),",
        "cold = cache cleared before each call (first call with a new alias structure).",
        "Thunder = cached call of `thunder.jit(lambda *a: a[0] + 1)` (total), eager = same",
        "function without Thunder, overhead = total - eager.",
        "",
        "| inputs | independent warm (us) | interleaved warm / cold (us) | overlapping warm / cold (us) "
        "| Thunder cached call (us) | eager (us) | Thunder overhead (us) |",
        "|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for n in SIZES:
        ind = g[("independent", n)]
        itl = g[("interleaved", n)]
        ovl = g[("overlapping", n)]
        jit_us, eager_us = th[n]
        lines.append(
            f"| {n} | {ind[0]:.1f} | {itl[0]:.1f} / {itl[1]:.1f} | {ovl[0]:.1f} / {ovl[1]:.1f} "
            f"| {jit_us:.1f} | {eager_us:.1f} | {jit_us - eager_us:.1f} |"
        )
    lines += ["", "Labels (sanity): " + "; ".join(
        f"{name}@{n}: {len(set(g[(name, n)][2]))} component(s)" for name in ("independent", "interleaved", "overlapping")
        for n in SIZES)]
    lines += [
        "",
        "# Many views of one buffer, cold (first call with a new structure)",
        "",
        "| case | views | cold (ms) | components |",
        "|---|---:|---:|---:|",
    ]
    lines += [f"| {case} | {m} | {ms:.2f} | {nc} |" for case, m, ms, nc in many]
    lines += [
        "",
        f"Components of {comp['sets']} random sets of views sharing 1-3 layouts ({comp['tensors']} tensors) "
        f"vs numpy.shares_memory pairwise (exact): {comp['wrong']} wrong.",
    ]
    lines += [
        "",
        "# Accuracy vs numpy.shares_memory (exact)",
        "",
        f"{acc['pairs']} random pairs of `as_strided` views (0-4 dims of size 0-6, strides 0-64, mixed dtypes) "
        "of one 1 KiB buffer, `may_overlap` with the default cap.",
        "",
        "| pairs | sharing (numpy) | false positives | false negatives | cap hit | max work |",
        "|---:|---:|---:|---:|---:|---:|",
        f"| {acc['pairs']} | {acc['sharing (numpy)']} | {acc['false positives']} | {acc['false negatives']} "
        f"| {acc['cap hit']} | {acc['max work']} |",
        "",
        "Deciding rung: " + ", ".join(f"{k} {v}" for k, v in acc["stages"].items())
        + f" ({acc['seconds']:.1f} s incl. numpy).",
        "",
        "Adversarial pairs (same layout shifted by 500 elements; they do not overlap):",
        "",
        "| case | answer | exact | rung | work | ours (ms) | numpy exact (ms) |",
        "|---|---|---|---|---:|---:|---:|",
    ]
    for case, v, ours_ms, np_ms in adv:
        lines.append(f"| {case} | {v.overlap} | {v.exact} | {v.stage} | {v.work} | {ours_ms:.2f} | {np_ms:.2f} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", help="also write the report to OUT/guard.md")
    ap.add_argument("--pairs", type=int, default=10_000, help="random pairs for the accuracy check")
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    text = report(args.pairs)
    sys.stdout.write(text)
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, "guard.md"), "w") as fh:
            fh.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
