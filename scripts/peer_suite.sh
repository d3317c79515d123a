#!/usr/bin/env bash
# Run Thunder 0.2.6's own alias tests (thunder/tests/test_update_aliases.py and
# thunder/tests/test_inplace_copy.py, from the installed package, not copied)
# through fusion_alias, with the pytest plugin fusion_alias/peer_plugin.py.
#
#   ./scripts/peer_suite.sh                 # fusion_alias, reference backend, reads-first
#   ./scripts/peer_suite.sh --plain         # the same tests on plain Thunder (baseline)
#   ./scripts/peer_suite.sh --fusion-alias-schedule writes-first
#   ./scripts/peer_suite.sh -k chained      # extra arguments go to pytest
#
# Prints `peer: N passed, M failed, K skipped` (errors count as failed), then the
# tail of pytest's output. Exit status: pytest's.
# --noconftest: Thunder's tests/conftest.py imports pytest_benchmark, which is not
# a project dependency; it only adds GPU-memory fixtures and a CUDA-test fixture.
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="$("$here/scripts/env.sh")" || exit 1
tests="$("$venv/bin/python" -c 'import os, thunder.tests as t; print(os.path.dirname(t.__file__))' 2>/dev/null)"
args=()
label="fusion_alias"
for a in "$@"; do
    if [ "$a" = "--plain" ]; then args+=("--fusion-alias-off"); label="plain thunder"; else args+=("$a"); fi
done
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
cd "$here"
PYTHONPATH="$here${PYTHONPATH:+:$PYTHONPATH}" timeout "${PEER_TIMEOUT:-1200}" \
    "$venv/bin/python" -m pytest -q -p no:cacheprovider --noconftest -p fusion_alias.peer_plugin \
    -rfEs --tb=short -o addopts="" \
    "$tests/test_update_aliases.py" "$tests/test_inplace_copy.py" "${args[@]}" >"$log" 2>&1
rc=$?
summary="$(grep -E '^(=+ )?[0-9]+ (passed|failed|skipped|error|deselected)|no tests ran' "$log" | tail -1)"
count() { echo "$summary" | grep -oE "[0-9]+ $1" | head -1 | cut -d' ' -f1; }
p=$(count passed); f=$(count failed); e=$(count error); s=$(count skipped); x=$(count xfailed)
p=${p:-0}; f=${f:-0}; e=${e:-0}; s=${s:-0}; x=${x:-0}
echo "peer ($label): $p passed, $((f + e)) failed, $((s + x)) skipped"
echo "---- pytest output (tail) ----"
grep -vE '^(DEBUG|INFO) ' "$log" | tail -n "${PEER_TAIL:-40}"
exit $rc
