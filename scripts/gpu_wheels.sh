#!/usr/bin/env bash
# Fetch, on a machine that reaches PyPI, the wheels that scripts/gpu_check.sh installs on an offline
# GPU machine (the lent ones reach no registry; they bring their own torch). Run from the repo root:
#
#   bash scripts/gpu_wheels.sh [TORCH_MINOR] [CUDA_MAJOR]     # defaults: 2.9 13
#
# TORCH_MINOR and CUDA_MAJOR must be those of the GPU machine's own torch (python3 -c 'import torch;
# print(torch.__version__)' there): nvFuser's wheels are built against one torch minor release and
# do not load with another (undefined c10 symbols). Wheels go to .whl/ (git-ignored); name `.whl`
# in the device tool's `carry`. The carried working tree is limited to 64 MiB in all.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
torch_minor="${1:-2.9}"
cuda_major="${2:-13}"
case "$cuda_major" in
    12) cu=cu128 ;;
    13) cu=cu130 ;;
    *) echo "CUDA_MAJOR must be 12 or 13" >&2; exit 2 ;;
esac
nvfuser="nvfuser-$cu-torch${torch_minor/./}"
dest="$repo/.whl"
rm -rf "$dest"
mkdir -p "$dest"
py="${PYTHON:-python3}"
# Thunder 0.2.6 and the dependencies the GPU image lacks (it has numpy, networkx, opt-einsum,
# lightning-utilities, mpmath, pytest, hypothesis).
for req in "lightning-thunder==0.2.6" "looseversion==1.3.0" optree dill "$nvfuser"; do
    "$py" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
        --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
        --platform manylinux2014_x86_64 -d "$dest" "$req" \
        || { echo "no wheel for $req (Python 3.12, x86-64)" >&2; exit 1; }
done
ls -la "$dest"
total=$(du -cb "$dest"/*.whl | tail -n 1 | cut -f1)
tree=$(git -C "$repo" ls-files -z | xargs -0 du -cb 2>/dev/null | tail -n 1 | cut -f1)
echo "wheels: $((total / 1048576)) MiB; tracked tree: $((tree / 1048576)) MiB; carry limit 64 MiB"
if [ $((total + tree)) -gt $((64 * 1048576)) ]; then
    echo "TOO LARGE to carry: $nvfuser alone does not fit the device tool's 64 MiB" >&2
    exit 1
fi
