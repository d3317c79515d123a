#!/usr/bin/env bash
# Run the test suite (creates or reuses the pinned virtual environment first).
# Extra arguments go to pytest, e.g. ./scripts/test.sh -k seed
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="$("$here/scripts/env.sh")"
cd "$here"
PYTHONPATH="$here${PYTHONPATH:+:$PYTHONPATH}" exec "$venv/bin/python" -m pytest -q "$@"
