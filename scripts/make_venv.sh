#!/usr/bin/env bash
# make_venv.sh PYTHON REQUIREMENTS VENV [WHAT]: create VENV from REQUIREMENTS with PYTHON unless it is
# complete already, one installer at a time (flock: a second caller waits for the first instead of
# deleting its half-built venv). Shared by env.sh, env_nvfuser.sh and test_torch.sh.
set -euo pipefail
py="$1"; reqs="$2"; venv="$3"; what="${4:-the pinned packages}"
mkdir -p "$(dirname "$venv")"
exec 9>"$venv.lock"
flock 9
if [ ! -f "$venv/.complete" ]; then
    echo "fusion_alias: creating $venv (first run installs $what)" >&2
    rm -rf "$venv"
    "$py" -m venv "$venv"
    "$venv/bin/python" -m pip install -q --upgrade pip >&2
    "$venv/bin/python" -m pip install -q -r "$reqs" >&2
    touch "$venv/.complete"
fi
