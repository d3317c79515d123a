#!/usr/bin/env bash
# Run the test suite against another torch: ./scripts/test_torch.sh 2.11 [pytest args...]
#
# Creates (first run: torch is several GB) or reuses a virtual environment
# $FUSION_ALIAS_VENV_ROOT/venv-py<ver>-<hash>-torch<ver> (default root ~/.cache/fusion_alias)
# from requirements-torch<ver>.txt, then runs pytest in it. The default torch
# (requirements.txt, scripts/test.sh) is untouched. `--venv-only` prints the venv path and stops.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
torch_version="${1:?usage: scripts/test_torch.sh TORCH_VERSION [--venv-only | pytest args...]}"
shift
reqs="$here/requirements-torch$torch_version.txt"
if [ ! -f "$reqs" ]; then
    echo "fusion_alias: no $reqs (tested torches: $(ls "$here"/requirements-torch*.txt | sed 's/.*requirements-torch//; s/\.txt//' | tr '\n' ' '))" >&2
    exit 2
fi
py="${FUSION_ALIAS_PYTHON:-python3}"
pyver="$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
key="$(sha256sum < "$reqs" | cut -c1-12)"
root="${FUSION_ALIAS_VENV_ROOT:-$HOME/.cache/fusion_alias}"
venv="$root/venv-py$pyver-$key-torch$torch_version"
"$here/scripts/make_venv.sh" "$py" "$reqs" "$venv" "torch $torch_version"
if [ "${1:-}" = "--venv-only" ]; then
    echo "$venv"
    exit 0
fi
cd "$here"
"$venv/bin/python" -c 'import torch, thunder; print("torch", torch.__version__, "thunder", thunder.__version__)'
PYTHONPATH="$here${PYTHONPATH:+:$PYTHONPATH}" exec "$venv/bin/python" -m pytest -q "$@"
