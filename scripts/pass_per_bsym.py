"""The whole fusion pass's wall time per flattened bound symbol, at several sizes, in one process.

A growth exponent fitted between two single runs moves with this VM's noise (one run can be 1.5x
another of the same trace); per-symbol times at many sizes show whether the pass grows faster than
linearly. Per size: the best of REPS passes, each on a freshly built synthetic trace
(fusion_alias/bench/scale.py), and the minor page faults of the last run.

usage: PYTHONPATH=. python scripts/pass_per_bsym.py KIND ALIASED SIZES [REPS]
       e.g. scripts/pass_per_bsym.py chain 1 3000,10000,30000,100000 2
"""
import gc
import resource
import sys

from fusion_alias.bench import scale

kind, aliased, sizes = sys.argv[1], sys.argv[2] == "1", [int(s) for s in sys.argv[3].split(",")]
reps = int(sys.argv[4]) if len(sys.argv) > 4 else 2
for size in sizes:
    best, faults = float("inf"), 0
    for _ in range(reps):
        syn = scale.build(kind, size)
        gc.collect()
        before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        fused, whole, _, _ = scale.time_fusion_pass(syn.trace, aliased)
        faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before
        best = min(best, whole)
        del fused, syn
    print(f"{kind} aliased={aliased} {size:>7}: whole pass {best:.3f} s = {best / size * 1e6:.1f} us/bsym "
          f"(minor page faults, last run: {faults})", flush=True)
