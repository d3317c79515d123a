"""Every fusion pass's result, as text, for checking that a change of the pass changes no result.

Records each pass's final trace and each region's fusion definition with its alias groups (or the
error a pass raised) while running fuzz programs (reads-first), the bench suite and the synthetic
scale traces; timings and checkout paths are blanked. Run it on the old and the new code and
compare the two files (``cmp``): a refactoring of the pass must leave them byte-identical.
(Synthetic traces print "REPR FAIL" lines on stderr: their constant ``convert_element_type`` has
no proxy output, which a real trace never has; the region is never run.)

usage: PYTHONPATH=. python scripts/pass_outputs.py OUT [FUZZ_PROGRAMS=60] [SEEDS=1,...]
"""
import sys, traceback, warnings, io, contextlib
warnings.simplefilter("ignore")
from fusion_alias.executor import FusionAliasExecutor

LOG = []
orig = FusionAliasExecutor._fusion_pass
def rec(self, trace):
    try:
        t = orig(self, trace)
    except Exception as e:
        LOG.append(f"#### pass raised {type(e).__name__}: {e}")
        raise
    import re
    parts = ["#### pass", re.sub(r"# Constructed by fusion_alias \(.*\)", "# Constructed by fusion_alias", str(t))]
    for b in t.bound_symbols:
        if b.sym.is_fusion:
            try:
                parts.append(repr(b._call_ctx[b.sym.name]))
            except Exception as e:
                parts.append(f"repr raised {type(e).__name__}: {e}")
                print("REPR FAIL", b.sym.name, e, str(t)[-1500:], file=sys.stderr)
    LOG.append("\n".join(parts))
    return t
FusionAliasExecutor._fusion_pass = rec

out = sys.argv[1]
n = int(sys.argv[2]) if len(sys.argv) > 2 else 60
seeds = [int(s) for s in sys.argv[3].split(",")] if len(sys.argv) > 3 else [1]
from fusion_alias.fuzz.cli import main as fuzz_main
for s in seeds:
    LOG.append(f"######## fuzz seed {s}")
    with contextlib.redirect_stdout(io.StringIO()):
        fuzz_main(["--programs", str(n), "--seed", str(s), "--schedule", "reads-first", "--no-shrink", "--max-failures", "100000"])
LOG.append("######## bench programs")
from fusion_alias.bench.programs import SUITE as PROGRAMS
import fusion_alias
for p in PROGRAMS:
    LOG.append(f"## {p.name}")
    try:
        args = p.make_inputs(0)
        fusion_alias.jit(p.fn)(*args)
    except Exception as e:
        LOG.append(f"raised {type(e).__name__}")
LOG.append("######## scale")
from fusion_alias.bench import scale
for kind in scale.KINDS:
    for aliased in (False, True):
        syn = scale.build(kind, 3000)
        with scale._thunder_reports(aliased):
            from fusion_alias.executor import executor as EX; EX.fusion_pass(syn.trace)
import pathlib
repo = str(pathlib.Path(fusion_alias.__file__).resolve().parent.parent) + "/"
open(out, "w").write("\n".join(LOG).replace(repo, "/REPO/"))
print(out, len(LOG), "entries")
