#!/usr/bin/env bash
# The whole fusion pass of an older commit and of this checkout, run alternately (a shared machine's
# speed drifts within minutes: only the pairs compare). Prints, per run, the pass's wall time, then the
# gc.collect() after and before it (scripts/pass_stages.py; the bench's figure is pass + after - before).
# usage: scripts/pass_ab.sh BASE_REV KIND SIZE ALIASED ROUNDS   e.g. scripts/pass_ab.sh 5e7e8c6 views 100000 0 2
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
base_rev=$1 kind=$2 size=$3 aliased=$4 rounds=$5
py=$(./scripts/env.sh)/bin/python
base=$(mktemp -d)
trap 'rm -rf "$base"' EXIT
git archive "$base_rev" | tar -x -C "$base"
cp scripts/pass_stages.py "$base/scripts/pass_stages.py"  # (the same measurement on both sides)
for _ in $(seq "$rounds"); do
  for side in "$base" "$PWD"; do
    label=$([ "$side" = "$base" ] && echo "$base_rev" || echo "this")
    echo "$label $(cd "$side" && PYTHONPATH=. "$py" scripts/pass_stages.py "$kind" "$size" "$aliased" 1 2>/dev/null \
      | head -1 | sed 's/.*before: //')"
  done
done
