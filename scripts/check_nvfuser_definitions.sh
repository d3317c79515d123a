#!/usr/bin/env bash
# Build, with real nvFuser (nvfuser_direct) on CPU, the FusionDefinition of every region of the seed
# programs, of every benchmark program and of a fuzz sample (300 programs by default) -- without
# executing any (that needs a GPU). Creates or reuses the second pinned environment first
# (scripts/env_nvfuser.sh: Python 3.12, torch 2.10, nvfuser-cu130-torch210; ~4 min the first time).
#
#   ./scripts/check_nvfuser_definitions.sh              # ends with "nvfuser definitions: N regions built, F failed"
#   ./scripts/check_nvfuser_definitions.sh --print      # ... and prints every definition
#   ./scripts/check_nvfuser_definitions.sh --only seed --fuzz 50
#
# Exits non-zero when any definition fails. See fusion_alias/nvfuser_check.py.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="$("$here/scripts/env_nvfuser.sh")"
cd "$here"
PYTHONPATH="$here${PYTHONPATH:+:$PYTHONPATH}" exec "$venv/bin/python" -W ignore -m fusion_alias.nvfuser_check "$@"
