#!/usr/bin/env bash
# On a machine with network access: download the wheels that studies/gpu/run.sh installs on a GPU machine that has
# none (Python 3.12, manylinux x86-64; the packages of requirements.txt, without their dependencies).
#
#   bash studies/gpu/fetch_wheels.sh [DIR]      # default: studies/gpu/wheels
#
# Then bring DIR to the GPU machine with the repository and run `bash studies/gpu/run.sh --wheels DIR`.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
dir="${1:-$here/wheels}"
mkdir -p "$dir"
platforms=()
for tag in manylinux_2_39 manylinux_2_35 manylinux_2_34 manylinux_2_31 manylinux_2_28 manylinux_2_27 manylinux_2_24 \
           manylinux_2_17 manylinux2014 manylinux1; do
  platforms+=(--platform "${tag}_x86_64")
done
"${PYTHON:-python3}" -m pip download --quiet --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  "${platforms[@]}" --platform any -d "$dir" -r "$here/requirements.txt"
count=$(ls "$dir"/*.whl | wc -l)
echo "fetch_wheels: $count wheels in $dir ($(du -sh "$dir" | cut -f1))"
