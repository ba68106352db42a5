#!/usr/bin/env bash
# The whole test suite: installs what is missing, builds, runs every test through ctest
# (C++ suites, Python suites against torch.nn.LSTM, hardening, kernels, install, bench smoke),
# then scripts/test-hardening.sh: ASan+UBSan+LSan build of the C++ suites, the TSan
# concurrency run and the fuzzer for 60 s (LSTMOP_HARDENING=0 skips that last part).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
ctest --test-dir build --output-on-failure -j "$(nproc)"
if [ "${LSTMOP_HARDENING:-1}" = 1 ]; then
  bash scripts/test-hardening.sh
fi
