#!/usr/bin/env bash
# The hardening steps of scripts/test.sh, each in its own build folder:
#   1. AddressSanitizer + UndefinedBehaviorSanitizer (+ LeakSanitizer) build of the C++ suites
#      (every gtest suite of tests/ and the fuzz corpus replay; no torch binding, bench or
#      examples): ctest.
#   2. ThreadSanitizer build of the concurrency tests (ctest label "concurrency"), with
#      tests/tsan.supp: reports inside the uninstrumented oneDNN library are not lstmop's.
#   3. The libFuzzer target (clang): the checked-in seeds once, then fuzzing for
#      LSTMOP_FUZZ_SECONDS (default 60) on a copy of fuzz/corpus/; prints the executions.
# Fails on the first failure. LSTMOP_HARDENING_STEPS (default "asan tsan fuzz") picks steps.
set -euo pipefail
cd "$(dirname "$0")/.."

jobs="${LSTMOP_JOBS:-$(nproc)}"
fuzz_seconds="${LSTMOP_FUZZ_SECONDS:-60}"
steps="${LSTMOP_HARDENING_STEPS:-asan tsan fuzz}"
clangxx="${LSTMOP_CLANGXX:-clang++}"
script_start=$(date +%s)

# Sanitizer builds: -O1 keeps them fast enough and the reports exact.
common=(-G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g"
        -DLSTMOP_BUILD_TORCH=OFF -DLSTMOP_BUILD_BENCH=OFF -DLSTMOP_BUILD_EXAMPLES=OFF)

step_start() {
  echo "=== hardening: $1"
  step_t0=$(date +%s)
}
step_done() {
  echo "=== hardening: $1 passed ($(( $(date +%s) - step_t0 )) s)"
}

if [[ " $steps " == *" asan "* ]]; then
  step_start "AddressSanitizer + UndefinedBehaviorSanitizer + LeakSanitizer (build-hard-asan)"
  cmake -S . -B build-hard-asan "${common[@]}" -DLSTMOP_SANITIZE=address,undefined >/dev/null
  cmake --build build-hard-asan -j "$jobs"
  # allocator_may_return_null: an allocation that cannot succeed returns null (lstmop reports
  # an Error) instead of aborting inside operator new. The install test (label "install") builds
  # a separate consumer project and runs in the main build.
  ASAN_OPTIONS="detect_leaks=1:allocator_may_return_null=1:strict_string_checks=1:detect_stack_use_after_return=1" \
  UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1" \
    ctest --test-dir build-hard-asan --output-on-failure -j "$jobs" -LE install
  step_done "ASan/UBSan/LSan"
fi

if [[ " $steps " == *" tsan "* ]]; then
  step_start "ThreadSanitizer (build-hard-tsan)"
  cmake -S . -B build-hard-tsan "${common[@]}" -DLSTMOP_SANITIZE=thread >/dev/null
  cmake --build build-hard-tsan -j "$jobs" --target test_concurrency test_thread_pair \
    test_unit_balance test_bidirectional_threads
  tsan_ctest() {
    TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$PWD/tests/tsan.supp" \
      "$@" ctest --test-dir build-hard-tsan --output-on-failure -L concurrency
  }
  # Kernels with high-entropy ASLR can break TSan's fixed memory layout ("unexpected memory
  # mapping"); then rerun with ASLR off for this process tree.
  if ! tsan_ctest env 2>&1 | tee build-hard-tsan/ctest.log; then
    if grep -q "unexpected memory mapping" build-hard-tsan/ctest.log &&
       setarch "$(uname -m)" -R true 2>/dev/null; then
      echo "hardening: TSan needs ASLR off on this kernel; rerunning under setarch -R"
      tsan_ctest setarch "$(uname -m)" -R
    else
      exit 1
    fi
  fi
  step_done "TSan"
fi

if [[ " $steps " == *" fuzz "* ]]; then
  step_start "libFuzzer (build-hard-fuzz), ${fuzz_seconds} s"
  cmake -S . -B build-hard-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_COMPILER="$clangxx" -DLSTMOP_BUILD_FUZZ=ON -DLSTMOP_BUILD_TESTS=OFF \
    -DLSTMOP_BUILD_TORCH=OFF -DLSTMOP_BUILD_BENCH=OFF -DLSTMOP_BUILD_EXAMPLES=OFF >/dev/null
  cmake --build build-hard-fuzz -j "$jobs" --target lstmop_fuzz
  # malloc_context_size: shorter allocation stacks (the fuzzer allocates a lot; reports stay readable).
  export ASAN_OPTIONS="detect_leaks=1:allocator_may_return_null=1:malloc_context_size=8"
  export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
  ctest --test-dir build-hard-fuzz --output-on-failure -L fuzz
  # Fuzz a copy, so that the checked-in corpus never changes.
  rm -rf build-hard-fuzz/corpus-work build-hard-fuzz/artifacts
  cp -r fuzz/corpus build-hard-fuzz/corpus-work
  mkdir -p build-hard-fuzz/artifacts
  build-hard-fuzz/fuzz/lstmop_fuzz -max_total_time="$fuzz_seconds" -timeout=20 \
    -rss_limit_mb=4096 -print_final_stats=1 -artifact_prefix=build-hard-fuzz/artifacts/ \
    build-hard-fuzz/corpus-work 2>&1 | tee build-hard-fuzz/fuzz.log | grep -E "^#[0-9]+[[:space:]]+(INITED|DONE)|^stat::|ERROR|lstmop_fuzz:" || true
  # libFuzzer exits non-zero on a finding; pipefail is off for the grep above, so check here.
  if ! grep -q "^Done [0-9]* runs in" build-hard-fuzz/fuzz.log || ls build-hard-fuzz/artifacts/* >/dev/null 2>&1; then
    echo "hardening: the fuzzer found a problem (build-hard-fuzz/fuzz.log, build-hard-fuzz/artifacts/)"
    tail -n 60 build-hard-fuzz/fuzz.log
    exit 1
  fi
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' build-hard-fuzz/fuzz.log)
  secs=$(sed -n 's/^Done [0-9]* runs in \([0-9]*\) second.*/\1/p' build-hard-fuzz/fuzz.log)
  echo "hardening: fuzzer ran ${execs} executions in ${secs} s ($(( execs / (secs > 0 ? secs : 1) )) per second), no finding"
  step_done "libFuzzer"
fi

echo "=== hardening: all steps passed in $(( $(date +%s) - script_start )) s"
