#!/usr/bin/env bash
# Create (or reuse) the project's virtual environment and print its path.
#
# The venv lives outside the clone, keyed by a hash of requirements.txt and the
# Python version, so a fresh clone (CI clones anew every run) reuses the ~7 GB
# torch install instead of downloading it again. Override the location with
# FUSION_ALIAS_VENV_ROOT.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
py="${FUSION_ALIAS_PYTHON:-python3}"
pyver="$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
key="$(cat "$here/requirements.txt" | sha256sum | cut -c1-12)"
root="${FUSION_ALIAS_VENV_ROOT:-$HOME/.cache/fusion_alias}"
venv="$root/venv-py$pyver-$key"
"$here/scripts/make_venv.sh" "$py" "$here/requirements.txt" "$venv" "torch, ~2-5 min"
echo "$venv"
