#!/usr/bin/env bash
# Run the main demo: the seed repros with their fusion definitions and alias groups.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="$("$here/scripts/env.sh")"
PYTHONPATH="$here${PYTHONPATH:+:$PYTHONPATH}" exec "$venv/bin/python" "$here/examples/seed_repros.py" "$@"
