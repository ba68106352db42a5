#!/usr/bin/env bash
# The whole test suite: installs what is missing, builds, runs every test
# (C++ and Python suites through ctest, then the sanitizer builds and the fuzzer).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
ctest --test-dir build --output-on-failure -j "$(nproc)"
if [ -f scripts/test-hardening.sh ]; then
  bash scripts/test-hardening.sh
fi
