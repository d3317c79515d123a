#!/usr/bin/env bash
# One-shot check of the nvFuser backend on a fresh GPU machine.
#
#   bash scripts/gpu_check.sh          # from the repository root (or anywhere)
#
# Steps (each echoed, each under `timeout`, the whole well under 8 minutes):
#   1. pick Python 3.12 (nvFuser wheels are 3.12-only): python3.12, then
#      pyenv's 3.12, else python3 (reported; the nvFuser install will then
#      most likely fail and the CUDA tests will be skipped with that reason);
#   2. make a venv (reusing system site-packages, so a preinstalled torch is
#      not downloaded again) and pip install the pinned stack from PyPI, or,
#      where .whl/ holds wheels (scripts/gpu_wheels.sh; the lent GPU machines
#      are offline), from those wheels only;
#   3. pytest -m cuda tests/test_nvfuser.py;
#   4. scripts/gpu_bench.py (fusion_alias/nvFuser vs thunder.jit vs eager).
# A failing step is reported and the next ones still run. Results go to
# $OUT/gpu_results.md (./gpu-results/gpu_results.md when $OUT is unset), with
# the full logs next to it.
#
# Tunables (environment): GPU_CHECK_VENV (venv path), INSTALL_TIMEOUT (s,
# default 170), TEST_TIMEOUT (150), BENCH_TIMEOUT (110), BENCH_ARGS (extra
# arguments for gpu_bench.py).
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"
results_dir="${OUT:-$repo/gpu-results}"
mkdir -p "$results_dir"
results="$results_dir/gpu_results.md"
venv="${GPU_CHECK_VENV:-${TMPDIR:-/tmp}/fusion_alias_gpu_venv}"
install_timeout="${INSTALL_TIMEOUT:-170}"
test_timeout="${TEST_TIMEOUT:-150}"
bench_timeout="${BENCH_TIMEOUT:-110}"
t_start=$(date +%s)

step() { echo; echo "==== [$(( $(date +%s) - t_start ))s] $*"; }
md() { printf '%s\n' "$*" >>"$results"; }
fence() { md '```'; tail -n "${2:-40}" "$1" >>"$results" 2>/dev/null || true; md '```'; }

: >"$results"
md "# fusion_alias: nvFuser backend check on a GPU machine"
md ""
md "- date: $(date -u '+%Y-%m-%d %H:%M:%S UTC'); host: $(hostname 2>/dev/null || echo '?'); commit: $(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo 'not a git checkout')"

step "GPU"
gpu="$(timeout 30 nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | head -n 2 | tr '\n' ' ' || true)"
[ -n "$gpu" ] || gpu="nvidia-smi failed or missing"
echo "$gpu"
md "- GPU: $gpu"

step "Python 3.12"
is312() { [ -n "$1" ] && "$1" -c 'import sys; assert sys.version_info[:2] == (3, 12)' >/dev/null 2>&1; }
py=""
for cand in "$(command -v python3.12 || true)" /usr/bin/python3.12 /usr/local/bin/python3.12 \
    "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.12*/bin/python /root/.pyenv/versions/3.12*/bin/python; do
    if is312 "$cand"; then py="$cand"; break; fi
done
py_note=""
if [ -z "$py" ]; then
    py="$(command -v python3 || true)"
    py_note=" (NOT 3.12: no working python3.12 found; nvFuser wheels are 3.12-only, expect the install or the CUDA tests to fail)"
fi
if [ -z "$py" ] || ! "$py" -c 'import sys' >/dev/null 2>&1; then
    echo "no working python3 at all"
    md "- Python: none found; nothing else can run"
    exit 1
fi
pyver="$("$py" -c 'import sys; print(sys.version.split()[0])')"
echo "$py $pyver$py_note"
md "- Python: $py $pyver$py_note"

step "venv $venv + pip install (timeout ${install_timeout}s)"
install_log="$results_dir/install.log"
install_status="ok"
t0=$(date +%s)
if [ ! -x "$venv/bin/python" ]; then
    "$py" -m venv --system-site-packages "$venv" >"$install_log" 2>&1 || install_status="venv creation failed"
fi
wheels=("$repo"/.whl/*.whl)
if [ "$install_status" = "ok" ] && [ -e "${wheels[0]}" ]; then
    # Offline machine (the lent GPU machines reach no registry): wheels carried in .whl/ by
    # scripts/gpu_wheels.sh, on top of the machine's own torch (system site-packages).
    pip_rc=0
    md "- install source: ${#wheels[@]} carried wheels in .whl/ (offline), over the machine's own torch"
    PIP_DISABLE_PIP_VERSION_CHECK=1 timeout "$install_timeout" "$venv/bin/python" -m pip install --progress-bar off \
        --no-index --no-deps "${wheels[@]}" >>"$install_log" 2>&1 || pip_rc=$?
    if [ "$pip_rc" -ne 0 ]; then
        install_status="offline pip install failed (rc=$pip_rc); continuing with whatever is installed; see install.log"
    fi
elif [ "$install_status" = "ok" ]; then
    pip_rc=0
    PIP_DISABLE_PIP_VERSION_CHECK=1 timeout "$install_timeout" "$venv/bin/python" -m pip install --progress-bar off \
        "torch==2.9.1" "lightning-thunder==0.2.6" nvfuser-cu128-torch29 networkx numpy pytest hypothesis \
        >>"$install_log" 2>&1 || pip_rc=$?
    if [ "$pip_rc" -ne 0 ]; then
        install_status="pip install failed (rc=$pip_rc$([ "$pip_rc" -eq 124 ] && echo ", timed out")); continuing with whatever is installed; see install.log"
    fi
fi
echo "install: $install_status ($(( $(date +%s) - t0 ))s)"
md "- install: $install_status ($(( $(date +%s) - t0 ))s)"
vpy="$venv/bin/python"
[ -x "$vpy" ] || vpy="$py"
versions="$(timeout 120 "$vpy" - <<'EOF' 2>&1 || true
import importlib, warnings
warnings.filterwarnings("ignore")
out = []
for mod in ("torch", "thunder", "nvfuser", "nvfuser_direct"):
    try:
        m = importlib.import_module(mod)
        v = getattr(m, "__version__", None) or (m.version() if hasattr(m, "version") else "?")
        out.append(f"{mod} {v}")
    except Exception as e:
        out.append(f"{mod}: {type(e).__name__}: {str(e).splitlines()[0][:240] if str(e) else ''}")
try:
    import torch
    out.append(f"torch.cuda.is_available() = {torch.cuda.is_available()}, torch CUDA {torch.version.cuda}")
except Exception:
    pass
print("; ".join(out))
EOF
)"
echo "$versions"
md "- versions: $versions"
export PYTHONPATH="$repo${PYTHONPATH:+:$PYTHONPATH}"

step "pytest -m cuda tests/test_nvfuser.py (timeout ${test_timeout}s)"
test_log="$results_dir/pytest.log"
test_rc=0
timeout "$test_timeout" "$vpy" -m pytest -m cuda tests/test_nvfuser.py -q -rs -p no:cacheprovider >"$test_log" 2>&1 || test_rc=$?
tail -n 30 "$test_log"
md ""
md "## pytest -m cuda tests/test_nvfuser.py"
md ""
summary="$(grep -E '(passed|failed|skipped|error|no tests ran)' "$test_log" | tail -n 1 || true)"
case "$test_rc" in
    124) md "exit 124: TIMED OUT after ${test_timeout}s" ;;
    *) md "exit $test_rc: ${summary:-no pytest summary line (see pytest.log)}" ;;
esac
if ! grep -qE '[0-9]+ passed' "$test_log"; then
    md ""
    md "**No CUDA test passed on this machine** (skipped or failed: the reasons are in the log below)."
fi
md ""
fence "$test_log" 60

step "scripts/gpu_bench.py (timeout ${bench_timeout}s)"
bench_log="$results_dir/bench.log"
bench_rc=0
# shellcheck disable=SC2086
timeout "$bench_timeout" "$vpy" scripts/gpu_bench.py --out "$results" --budget $(( bench_timeout - 25 )) ${BENCH_ARGS:-} \
    >"$bench_log" 2>&1 || bench_rc=$?
tail -n 40 "$bench_log"
if [ "$bench_rc" -ne 0 ]; then
    md ""
    md "## Benchmark: exit $bench_rc$([ "$bench_rc" -eq 124 ] && echo " (TIMED OUT after ${bench_timeout}s)")"
    md ""
    fence "$bench_log" 40
fi

step "done in $(( $(date +%s) - t_start ))s: tests rc=$test_rc, bench rc=$bench_rc; results in $results"
md ""
md "Total: $(( $(date +%s) - t_start ))s; pytest rc=$test_rc; bench rc=$bench_rc."
# Exit non-zero when either step failed, after both have run and been reported.
[ "$test_rc" -eq 0 ] && [ "$bench_rc" -eq 0 ]
