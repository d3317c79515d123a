"""Per-stage process time of the whole fusion pass on a synthetic trace (fusion_alias/bench/scale.py).

Each stage of ``fusion_alias.pipeline`` is timed (process time), per stage the minimum over REPS
passes, each on a freshly built trace; then the wall time of each whole pass and of the gc.collect()
after and before it. Run the old and the new code alternately to compare on a shared machine.

usage: PYTHONPATH=. python scripts/pass_stages.py KIND SIZE ALIASED [REPS]
       (KIND chain|wide, ALIASED 0|1, REPS default 3), e.g. scripts/pass_stages.py chain 100000 1 2
"""
import sys, time, gc, functools, collections
from fusion_alias import pipeline
from fusion_alias.bench import scale

T = collections.defaultdict(float)
def wrap(mod, name, label=None):
    f = getattr(mod, name)
    @functools.wraps(f)
    def g(*a, **k):
        t0 = time.process_time()
        try:
            return f(*a, **k)
        finally:
            T[label or name] += time.process_time() - t0
    setattr(mod, name, g)
for n in ["flatten_trace", "_drop_update_aliases", "_input_groups", "copying_reshapes", "identical_inputs",
          "read_through_first", "analyze", "tensor_proxies_by_name", "drop_copies_onto_themselves",
          "check_refusals", "substitute_reads", "_dce", "build_edges", "partition", "fuse_regions"]:
    wrap(pipeline, n)
wrap(pipeline.base_updates, "rewrite", "base_updates.rewrite")
wrap(pipeline.report, "observe", "report.observe")

kind = sys.argv[1]; size = int(sys.argv[2]); aliased = sys.argv[3] == "1"
reps = int(sys.argv[4]) if len(sys.argv) > 4 else 3
best = {}
rows = []
for r in range(reps):
    T.clear()
    syn = scale.build(kind, size)
    c0 = time.process_time()
    fused, whole, gca, gcb = scale.time_fusion_pass(syn.trace, aliased)
    T["(gc after - before, wall)"] = gca - gcb
    del fused, syn
    for k, v in T.items():
        best[k] = min(best.get(k, 1e9), v)
    rows.append((whole, gca, gcb))
stage_sum = sum(v for k, v in best.items() if not k.startswith("("))
print(f"{kind} aliased={aliased} size={size} reps={reps} wall whole/gc_after/gc_before: " + "; ".join(f"{w:.2f}/{a:.2f}/{b:.2f}" for w, a, b in rows))
for k, v in sorted(best.items(), key=lambda kv: -kv[1]):
    if v >= 0.0005:
        print(f"  {k:32s} {v:.3f}")
print(f"  {'sum of stage minima (process)':32s} {stage_sum:.3f}")
