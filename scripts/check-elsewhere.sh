#!/usr/bin/env bash
# Builds and tests lstmop on a machine without Debian's packages, against the torch its python3
# has (a torch 2.x: the binding's check beyond Debian's 1.13), then runs the benchmark there.
# Needs the archive of scripts/pack-deps.sh (made on a Debian 12 machine), a C++ compiler,
# CMake and ninja. Results go to $OUT (default /tmp/lstmop-elsewhere): one log per phase and
# results.csv (every benchmark table).
# Usage: bash scripts/check-elsewhere.sh [PHASES] [ARCHIVE]
#   PHASES: comma-separated, of info,build,test,bench1,bench2 (default all)
#   ARCHIVE: default .dev/deps.tar.xz
# Environment: PYTHON (default the first python3 on PATH), BUILD (build folder, default build).
set -uo pipefail
cd "$(dirname "$0")/.."
phases=${1:-info,build,test,bench1,bench2}
archive=${2:-.dev/deps.tar.xz}
OUT=${OUT:-/tmp/lstmop-elsewhere}
mkdir -p "$OUT"
t0=$(date +%s)
stamp() { echo "[t=$(($(date +%s) - t0))s] $*"; }
has() { [[ ",$phases," == *",$1,"* ]]; }
py=${PYTHON:-$(command -v python3)}
build=${BUILD:-build}
export PATH=/usr/local/cuda/bin:$PATH
deps=/tmp/lstmop-deps
mkdir -p "$deps" && tar -C "$deps" -xJf "$archive" || { echo "cannot unpack $archive"; exit 1; }
export LD_LIBRARY_PATH=$deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
export CMAKE_PREFIX_PATH="$deps/usr;$($py -c 'import torch; print(torch.utils.cmake_prefix_path)')"
export PYTHONPATH=$PWD/python

if has info; then
  {
    stamp info
    grep -m1 'model name' /proc/cpuinfo
    nproc
    grep -m1 flags /proc/cpuinfo | tr ' ' '\n' | grep -E 'avx512|amx|fma|avx2|avx_vnni' | tr '\n' ' '
    echo
    uname -a
    head -2 /etc/os-release
    c++ --version | head -1
    cmake --version | head -1
    $py -c 'import sys, torch; cpu = getattr(torch.backends, "cpu", None)
print(sys.version); print("torch", torch.__version__, "mkldnn",
torch.backends.mkldnn.is_available(), "capability", cpu and cpu.get_cpu_capability())' 2>&1
  } 2>&1 | tee "$OUT/info.log"
fi

if has build; then
  {
    stamp configure
    timeout 150 cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DLSTMOP_PYTHON="$py" \
      -DLSTMOP_BUILD_TORCH=ON 2>&1 | tail -25
    if [ ! -f "$build/build.ninja" ]; then
      stamp "configure with torch failed: without the binding"
      timeout 90 cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
        -DLSTMOP_PYTHON="$py" -DLSTMOP_BUILD_TORCH=OFF 2>&1 | tail -15
    fi
    stamp build
    timeout 300 cmake --build "$build" -j "$(nproc)" 2>&1 | grep -v '^\[' | tail -40
    stamp built
    $py -c 'import torch, lstmop.nn; m = lstmop.nn.LSTM(8, 16)
print(m(torch.randn(5, 3, 8))[0].shape)' 2>&1 | tail -5
  } 2>&1 | tee "$OUT/build.log"
fi

if has test; then
  {
    stamp ctest
    timeout 240 ctest --test-dir "$build" --output-on-failure -j "$(nproc)" --timeout 200 2>&1
    stamp ctest done
  } >"$OUT/ctest.log" 2>&1
  grep -E 'tests passed|Failed|Timeout|\*\*\*|^\[t=' "$OUT/ctest.log" | head -60
fi

bench() {  # name, time limit, arguments of lstm_bench.py
  local name=$1 limit=$2
  shift 2
  stamp "bench $name: $*"
  timeout "$limit" $py bench/lstm_bench.py --out "/tmp/lstmop-bench/$name" \
    --onednn-peer "$build/bench/onednn_lstm_peer" --lstmop-runner "$build/bench/lstmop_runner" \
    --sgemm-probe "$build/bench/sgemm_probe" "$@" 2>&1 | tail -60
  { echo "== $name $*"; cat /tmp/lstmop-bench/"$name"/*.csv; } >>"$OUT/results.csv" 2>&1
}
if has bench1; then
  {
    bench accuracy 60 --accuracy
    bench small 150 --cases S2,S3,S5,S6,B5,F2,H2 --threads 1 --reps 3
    LSTMOP_BF16_STEP=fused bench fused 60 --cases S6,B5,F2 --threads 1 --reps 3 \
      --peers lstmop,lstmop_cpp
  } 2>&1 | tee "$OUT/bench1.log"
fi
if has bench2; then
  {
    bench large 240 --cases S1,B1,S4,B4 --threads 1 --reps 2
    bench two 150 --cases S1,S2,S4,B1,S6 --threads 2 --reps 2
  } 2>&1 | tee "$OUT/bench2.log"
fi
stamp end
