#!/usr/bin/env bash
# Fill .gpu_carry/ (git-ignored) with what scripts/gpu_check.sh needs on an offline lent GPU machine
# (Python 3.12, torch 2.11, no registry): the nvFuser bundle for torch 2.11 from ../shared/gpu and
# the wheels of Thunder 0.2.6 and of the packages it and the tests need. Run from a machine that
# reaches the registry:
#
#   bash scripts/gpu_wheels.sh            # then name ".gpu_carry" in the device call's carry
#
# The GPU machine's torch is used as it is (no torch wheel is carried); gpu_check.sh unzips only the
# wheels whose distributions that machine lacks. The device call carries 64 MiB at most: this keeps
# .gpu_carry/ under 60 MiB and says so.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dest="$repo/.gpu_carry"
shared=""
for cand in "${FUSION_ALIAS_SHARED_GPU:-}" "$repo/../shared/gpu" "$repo/../../shared/gpu" /work/shared/gpu; do
    if [ -n "$cand" ] && [ -f "$cand/nvfuser_torch211_bundle.tar.xz" ]; then shared="$cand"; break; fi
done
if [ -z "$shared" ]; then
    echo "no nvfuser_torch211_bundle.tar.xz found (set FUSION_ALIAS_SHARED_GPU to the folder holding it)" >&2
    exit 1
fi
rm -rf "$dest"
mkdir -p "$dest/wheels"
cp "$shared/nvfuser_torch211_bundle.tar.xz" "$shared/nvfuser_torch211_bundle.tar.xz.sha256" "$dest/"
[ -f "$shared/NVFUSER_LICENSE" ] && cp "$shared/NVFUSER_LICENSE" "$dest/"
(cd "$dest" && sha256sum -c --quiet nvfuser_torch211_bundle.tar.xz.sha256)
py="${PYTHON:-python3}"
# Thunder 0.2.6's requirements (torch aside) and the test tools. gpu_check.sh unzips what is missing there.
reqs=(
    "lightning-thunder==0.2.6" "looseversion==1.3.0" "lightning-utilities>0.7.0" numpy "networkx>=3.3"
    "optree>=0.12.1" "opt_einsum>=3.3.0" "mpmath<1.4.0" "dill>=0.3.8" packaging typing-extensions
    pytest pluggy iniconfig pygments hypothesis attrs sortedcontainers
)
"$py" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 -d "$dest/wheels" "${reqs[@]}"
ls -la "$dest" "$dest/wheels"
total=$(du -cb "$dest"/*.xz "$dest"/wheels/*.whl | tail -n 1 | cut -f1)
tree=$(git -C "$repo" ls-files -z | xargs -0 du -cb 2>/dev/null | tail -n 1 | cut -f1)
echo ".gpu_carry: $((total / 1048576)) MiB; tracked tree: $((tree / 1048576)) MiB; carry limit 64 MiB"
if [ $((total)) -gt $((60 * 1048576)) ] || [ $((total + tree)) -gt $((64 * 1048576)) ]; then
    echo "TOO LARGE to carry" >&2
    exit 1
fi
