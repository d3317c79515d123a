#!/usr/bin/env bash
# One-shot check of the nvFuser backend on a lent GPU machine (offline; Python 3.12, torch 2.11).
#
# Prepare on a machine with the registry (once): bash scripts/gpu_wheels.sh  -> .gpu_carry/ (git-ignored:
# the nvFuser bundle from ../shared/gpu and the wheels of Thunder 0.2.6 and what it needs, <= 60 MiB).
# Then, in the device call, with carry [".gpu_carry"]:
#
#   bash scripts/gpu_check.sh              # results in $OUT/gpu_results.md (./gpu-results/ without $OUT)
#   bash scripts/gpu_check.sh --dry-run    # on a CPU machine: every step up to the first CUDA call
#
# Steps (each echoed and timed, each under `timeout`; the whole within 8 minutes):
#   1. the machine's python3 (GPU_CHECK_PYTHON overrides it), its torch, nvidia-smi;
#   2. unpack the nvFuser bundle (.gpu_carry/nvfuser_torch211_bundle.tar.xz) into a temp dir, verify its
#      checksums; unzip into a temp site dir the carried wheels whose distributions python3 lacks;
#      a sitecustomize.py there loads nvfuser_direct through the bundle's loader before anything
#      imports it (skipped where nvfuser_direct already imports natively, e.g. with torch 2.10);
#      a one-line `nvfuser` module there gives Thunder 0.2.6's nvFuser executor the one classic
#      function it still imports (compute_tensor_descriptor), which the torch 2.10+ wheels do not ship;
#   3. the bundle's own smoke test (gpu_smoke.py: pointwise, bf16 reduction, permute, error path, leaks);
#   4. the definitions check on the seed programs (fusion_alias.nvfuser_check --only seed: every region's
#      definition built by this machine's nvfuser_direct, not executed);
#      pytest -m cuda tests/test_nvfuser.py (every seed program, the 2**22-element race tests, the
#      alias-keyed cache); with --dry-run the whole of tests/test_nvfuser.py (the cuda tests skip);
#   5. scripts/gpu_programs.py: the seed, bench and GPU_FUZZ (200) fuzz programs (seed GPU_FUZZ_SEED) on
#      nvFuser against eager on the same device, aliasing kept (outputs and every argument, two calls);
#   6. scripts/gpu_bench.py: Adam step, KV-cache decode, seeds: eager vs fusion_alias vs torch.compile
#      vs thunder.jit (with its nvFuser executor where it loads).
# A failing step is reported and the next ones still run; the exit status is non-zero if any failed.
set -uo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"
dry_run=0
[ "${1:-}" = "--dry-run" ] && dry_run=1
results_dir="${OUT:-$repo/gpu-results}"
mkdir -p "$results_dir"
results="$results_dir/gpu_results.md"
py="${GPU_CHECK_PYTHON:-python3}"
carry="$repo/.gpu_carry"
work="$(mktemp -d "${TMPDIR:-/tmp}/fusion_alias_gpu.XXXXXX")"
nvf="$work/nvf"
site="$work/site"
smoke_timeout="${SMOKE_TIMEOUT:-45}"
test_timeout="${TEST_TIMEOUT:-150}"
bench_timeout="${BENCH_TIMEOUT:-160}"
t_start=$(date +%s)
failed=()

step() { echo; echo "==== [$(( $(date +%s) - t_start ))s] $*"; }
md() { printf '%s\n' "$*" >>"$results"; }
fence() { md '```'; tail -n "${2:-40}" "$1" >>"$results" 2>/dev/null || true; md '```'; }

: >"$results"
md "# fusion_alias: nvFuser backend check$([ $dry_run = 1 ] && echo ' (DRY RUN on CPU: no GPU result)')"
md ""
md "- date: $(date -u '+%Y-%m-%d %H:%M:%S UTC'); commit: $(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo 'not a git checkout')"

step "machine"
gpu="$(timeout 30 nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | head -n 2 | tr '\n' ' ')"
[ -n "$gpu" ] || gpu="nvidia-smi failed or missing"
pyinfo="$("$py" -c 'import sys, torch; print(sys.version.split()[0], "torch", torch.__version__, "CUDA", torch.version.cuda, "cuda available", torch.cuda.is_available())' 2>&1 | tail -n 1)"
echo "GPU: $gpu"; echo "python: $py $pyinfo"
md "- GPU: $gpu"
md "- python: $py: $pyinfo"

step "nvFuser bundle and carried wheels -> $work"
mkdir -p "$nvf" "$site"
native="$("$py" -c 'import nvfuser_direct; print(nvfuser_direct.version())' 2>/dev/null)"
if [ -n "$native" ]; then
    md "- nvfuser_direct $native imports natively: the bundle is not used"
    bundle_dir=""
elif [ -f "$carry/nvfuser_torch211_bundle.tar.xz" ]; then
    if [ -f "$carry/nvfuser_torch211_bundle.tar.xz.sha256" ]; then
        (cd "$carry" && sha256sum -c --quiet nvfuser_torch211_bundle.tar.xz.sha256) || failed+=("bundle checksum")
    fi
    tar -C "$nvf" -xJf "$carry/nvfuser_torch211_bundle.tar.xz" && (cd "$nvf" && sha256sum -c --quiet SHA256SUMS) \
        || failed+=("bundle unpack/verify")
    bundle_dir="$nvf"
    md "- nvFuser bundle unpacked to $nvf$(printf '%s' "${failed[*]:-}" | grep -q bundle && echo ': FAILED checks' || echo ', checksums verified')"
else
    bundle_dir=""
    failed+=("no nvFuser: neither installed nor carried")
    md "- **no nvFuser**: nvfuser_direct does not import and .gpu_carry/nvfuser_torch211_bundle.tar.xz is missing (run scripts/gpu_wheels.sh first)"
fi
# Carried wheels: unzip those whose distribution the machine's python lacks (no pip needed: the
# image's python may have none, and the wheels are pure or built for cp312 manylinux).
"$py" - "$carry/wheels" "$site" <<'EOF' 2>&1 | tee "$results_dir/site.log"
import glob, importlib.metadata as md, os, re, sys, zipfile
src, site = sys.argv[1], sys.argv[2]
have, added = [], []
for whl in sorted(glob.glob(os.path.join(src, "*.whl"))):
    dist, version = os.path.basename(whl).split("-")[:2]
    try:
        have.append(f"{dist} {md.version(dist)}")
    except md.PackageNotFoundError:
        zipfile.ZipFile(whl).extractall(site)
        added.append(f"{dist} {version}")
print("carried wheels unzipped:", ", ".join(added) or "none")
print("already on the machine (kept):", ", ".join(have) or "none")
EOF
md "- $(grep 'unzipped' "$results_dir/site.log")"
md "- $(grep 'already on' "$results_dir/site.log")"
cat >"$site/sitecustomize.py" <<EOF
# Written by scripts/gpu_check.sh. The first 'import nvfuser_direct' (fusion_alias's backend or
# Thunder's executor, whichever comes first) goes through the torch 2.11 bundle's loader, which
# links nvFuser to the CUDA libraries torch loaded and to the c10 logging shim. Nothing is loaded
# before that import: a process that never asks for nvFuser never loads it.
import importlib.abc, importlib.util, sys

_BUNDLE = "$bundle_dir"


class _Existing(importlib.abc.Loader):
    def create_module(self, spec):
        return sys.modules[spec.name]

    def exec_module(self, module):
        pass


class _BundleFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name != "nvfuser_direct":
            return None
        sys.meta_path.remove(self)  # once; the loader's own import goes the ordinary way
        sys.path.insert(0, _BUNDLE)
        import nvf_torch211_load

        module = nvf_torch211_load.load()  # raises ImportError with the reason when it cannot
        return importlib.util.spec_from_loader(name, _Existing(), origin=getattr(module, "__file__", None))


if _BUNDLE:
    sys.meta_path.insert(0, _BundleFinder())
EOF
mkdir -p "$site/nvfuser"
cat >"$site/nvfuser/__init__.py" <<'EOF'
# Written by scripts/gpu_check.sh, for Thunder 0.2.6's nvFuser executor only: its compute_contiguity
# does `from nvfuser import compute_tensor_descriptor`, a classic-module import that the torch 2.10+
# nvFuser wheels (nvfuser_direct only) cannot satisfy. fusion_alias never imports this module.
from nvfuser_direct import compute_tensor_descriptor  # noqa: F401
EOF
export PYTHONPATH="$site:$repo${PYTHONPATH:+:$PYTHONPATH}"
versions="$(timeout 120 "$py" - <<'EOF' 2>&1 | tail -n 1
import importlib, warnings
warnings.filterwarnings("ignore")
out = []
for mod in ("torch", "thunder", "nvfuser_direct"):
    try:
        m = importlib.import_module(mod)
        v = getattr(m, "__version__", None) or (m.version() if hasattr(m, "version") else "?")
        out.append(f"{mod} {v} ({getattr(m, '__file__', '?')})")
    except Exception as e:
        out.append(f"{mod}: {type(e).__name__}: {str(e).splitlines()[0][:240] if str(e) else ''}")
try:
    from fusion_alias.backends import nvfuser as nvb
    out.append("fusion_alias nvFuser backend: " + (nvb.missing() or "available"))
    from thunder.executors import nvfuserex
    out.append(f"Thunder's nvFuser executor: {'loaded' if nvfuserex.nvfuserex is not None else 'not loaded'}")
except Exception as e:
    out.append(f"fusion_alias/thunder: {type(e).__name__}: {e}")
print("; ".join(out))
EOF
)"
echo "$versions"
md "- versions: $versions"
echo "$versions" | grep -q "fusion_alias nvFuser backend: available" || [ $dry_run = 1 ] || failed+=("backend not available")

if [ -n "${GPU_EXTRA:-}" ]; then  # a diagnostic command in the same environment, python as $GPU_PY (GPU_EXTRA_ONLY=1: nothing else)
    step "extra: $GPU_EXTRA"
    extra_rc=0
    GPU_PY="$py" timeout "${EXTRA_TIMEOUT:-150}" bash -c "$GPU_EXTRA" >"$results_dir/extra.log" 2>&1 || extra_rc=$?
    tail -n 60 "$results_dir/extra.log"
    md "- extra command \`$GPU_EXTRA\`: exit $extra_rc (extra.log)"
    if [ "${GPU_EXTRA_ONLY:-0}" = 1 ]; then
        rm -rf "$work"
        exit "$extra_rc"
    fi
fi

step "bundle smoke test (timeout ${smoke_timeout}s)"
if [ $dry_run = 1 ]; then
    md "- smoke test: skipped (dry run: it executes kernels)"
elif [ -n "$bundle_dir" ] && [ -f "$bundle_dir/gpu_smoke.py" ]; then
    smoke_rc=0
    timeout "$smoke_timeout" "$py" "$bundle_dir/gpu_smoke.py" >"$results_dir/smoke.log" 2>&1 || smoke_rc=$?
    tail -n 15 "$results_dir/smoke.log"
    md ""; md "## bundle smoke test (gpu_smoke.py): exit $smoke_rc"; md ""; fence "$results_dir/smoke.log" 20
    [ $smoke_rc = 0 ] || failed+=("smoke test rc=$smoke_rc")
else
    md "- smoke test: skipped (bundle not used)"
fi

step "nvFuser definitions of the seed programs, built by this machine's nvfuser_direct (timeout 120s)"
defs_rc=0
timeout 120 "$py" -W ignore -m fusion_alias.nvfuser_check --only seed >"$results_dir/definitions.log" 2>&1 || defs_rc=$?
tail -n 3 "$results_dir/definitions.log"
md "- definitions check (seeds; built, not executed): exit $defs_rc: $(tail -n 1 "$results_dir/definitions.log")"
[ $defs_rc = 0 ] || failed+=("definitions rc=$defs_rc")

if [ $dry_run = 1 ]; then
    tests=(tests/test_nvfuser.py)
else
    tests=(-m cuda tests/test_nvfuser.py)
fi
step "pytest ${tests[*]} (timeout ${test_timeout}s)"
test_rc=0
timeout "$test_timeout" "$py" -m pytest "${tests[@]}" -q -rs -p no:cacheprovider >"$results_dir/pytest.log" 2>&1 || test_rc=$?
tail -n 25 "$results_dir/pytest.log"
summary="$(grep -E '(passed|failed|skipped|error|no tests ran)' "$results_dir/pytest.log" | tail -n 1)"
md ""; md "## pytest ${tests[*]}"; md ""
case "$test_rc" in
    124) md "exit 124: TIMED OUT after ${test_timeout}s" ;;
    *) md "exit $test_rc: ${summary:-no pytest summary line (see pytest.log)}" ;;
esac
if [ $dry_run = 0 ] && ! grep -qE '[0-9]+ passed' "$results_dir/pytest.log"; then
    md ""; md "**No CUDA test passed on this machine** (skipped or failed: the reasons are in the log below)."
fi
md ""; fence "$results_dir/pytest.log" 60
[ $test_rc = 0 ] || failed+=("pytest rc=$test_rc")

programs_timeout="${PROGRAMS_TIMEOUT:-150}"
step "scripts/gpu_programs.py: seed, bench and ${GPU_FUZZ:-200} fuzz programs on nvFuser vs eager (timeout ${programs_timeout}s)"
prog_args=(--fuzz "${GPU_FUZZ:-200}" --seed "${GPU_FUZZ_SEED:-20827}" --budget $(( programs_timeout - 30 )) --out "$results")
[ $dry_run = 1 ] && prog_args+=(--cpu-dry-run --fuzz 20)
prog_rc=0
timeout "$programs_timeout" "$py" scripts/gpu_programs.py "${prog_args[@]}" >"$results_dir/programs.log" 2>&1 || prog_rc=$?
tail -n 30 "$results_dir/programs.log"
[ $prog_rc = 0 ] || { md "- gpu_programs.py: exit $prog_rc (see programs.log)"; failed+=("programs rc=$prog_rc"); }

step "scripts/gpu_bench.py (timeout ${bench_timeout}s)"
bench_args=(--out "$results" --budget $(( bench_timeout - 40 )))
[ $dry_run = 1 ] && bench_args+=(--cpu-dry-run --numel 4096 --kv-length 64 --kv-dim 16 --large 64 --iters 2 --warmup 1)
bench_rc=0
# shellcheck disable=SC2086
timeout "$bench_timeout" "$py" scripts/gpu_bench.py "${bench_args[@]}" ${BENCH_ARGS:-} >"$results_dir/bench.log" 2>&1 || bench_rc=$?
tail -n 40 "$results_dir/bench.log"
if [ $bench_rc != 0 ]; then
    md ""; md "## Benchmark: exit $bench_rc$([ $bench_rc = 124 ] && echo " (TIMED OUT after ${bench_timeout}s)")"; md ""
    fence "$results_dir/bench.log" 40
    failed+=("bench rc=$bench_rc")
fi

total=$(( $(date +%s) - t_start ))
step "done in ${total}s; failed: ${failed[*]:-nothing}; results in $results"
md ""
md "Total: ${total}s; failed steps: ${failed[*]:-none}."
rm -rf "$work"
[ ${#failed[@]} = 0 ]
