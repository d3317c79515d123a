#!/usr/bin/env bash
# Create (or reuse) the nvFuser virtual environment (Python 3.12, torch 2.10, nvfuser_direct) and
# print its path. Same scheme as scripts/env.sh: the venv lives outside the clone, keyed by a hash of
# requirements-nvfuser.txt, so a fresh clone reuses the multi-GB install. Python 3.12 comes from
# FUSION_ALIAS_PYTHON312, else pyenv's 3.12.x (the newest), else python3.12 on PATH.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
py="${FUSION_ALIAS_PYTHON312:-}"
if [ -z "$py" ]; then  # pyenv's 3.12, found by path too (CI's environment may not have pyenv on PATH)
    pyenv_root="$(pyenv root 2>/dev/null || echo "${PYENV_ROOT:-$HOME/.pyenv}")"
    for cand in "$pyenv_root"/versions/3.12*/bin/python3.12; do
        [ -x "$cand" ] && py="$cand"
    done
fi
if [ -z "$py" ]; then py="$(command -v python3.12 || true)"; fi
if [ -z "$py" ]; then
    echo "fusion_alias: no Python 3.12 found (set FUSION_ALIAS_PYTHON312)" >&2
    exit 2
fi
key="$(cat "$here/requirements-nvfuser.txt" | sha256sum | cut -c1-12)"
root="${FUSION_ALIAS_VENV_ROOT:-$HOME/.cache/fusion_alias}"
venv="$root/venv-nvfuser-py3.12-$key"
"$here/scripts/make_venv.sh" "$py" "$here/requirements-nvfuser.txt" "$venv" "torch 2.10 + nvFuser, several GB"
echo "$venv"
