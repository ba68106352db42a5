#!/usr/bin/env bash
# Packs the Debian packages lstmop builds against (oneDNN 2.6, GoogleTest, Google Benchmark, the
# OpenCL loader oneDNN links) into one archive, for scripts/check-elsewhere.sh on a machine that
# has a torch 2.x but neither Debian's archive nor a network (a lent GPU machine, say).
# Usage: bash scripts/pack-deps.sh [ARCHIVE]   (default .dev/deps.tar.xz; keep .dev/ ignored)
set -euo pipefail
cd "$(dirname "$0")/.."
archive=${1:-.dev/deps.tar.xz}
bash scripts/deps.sh
mkdir -p "$(dirname "$archive")"
list=$(mktemp)
dpkg -L libdnnl-dev libdnnl2 libgtest-dev libgmock-dev libbenchmark-dev libbenchmark1debian \
  ocl-icd-opencl-dev ocl-icd-libopencl1 opencl-c-headers opencl-clhpp-headers 2>/dev/null |
  grep -v -E '/share/doc|/share/man|^/usr/src' | sort -u |
  while read -r f; do
    if [ ! -d "$f" ] && { [ -f "$f" ] || [ -L "$f" ]; }; then echo "${f#/}"; fi
  done >"$list"
tar -C / -cJf "$archive" -T "$list"
rm -f "$list"
ls -l "$archive"
