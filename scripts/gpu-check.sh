#!/usr/bin/env bash
# scripts/gpu-check.sh — one command for whoever has a GPU (issue 15 §5).
#
# Builds featstore with CUDA required (build-gpu/), runs the GPU tests (the
# CUDA engines against their CPU twins, bit for bit; then test_gpu_serve on
# the real GPUs: `serve --topology detect`, trainers opening the device
# tiers by CUDA IPC, results equal to a CPU trainer's) and the GPU benchmark,
# and ends with a short report: device, driver, pass/fail/skip counts and
# the RESULT lines. The log of each step is kept in build-gpu/gpu-check/.
#
#   scripts/gpu-check.sh [--no-bench] [--out DIR]
#
# Exit status: 0 when every GPU test passed on a GPU; 1 when a step failed;
# 77 when no usable GPU was found (the build still ran, and the tests said
# why they skipped). It installs nothing: on a box without the build
# dependencies, run scripts/install-deps.sh first (Debian 12), or see
# docs/development.md "GPU check" for a machine that cannot reach a package registry.
set -uo pipefail
cd "$(dirname "$0")/.."
bench=1
out=build-gpu/gpu-check
while [ $# -gt 0 ]; do
    case "$1" in
    --no-bench) bench=0 ;;
    --out) out="$2"; shift ;;
    *) echo "gpu-check: unknown option '$1' (--no-bench, --out DIR)" >&2; exit 2 ;;
    esac
    shift
done
mkdir -p "$out"
jobs=$(nproc)

device="none"; driver="none"
if command -v nvidia-smi >/dev/null 2>&1; then
    q=$(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | head -1)
    [ -n "$q" ] && device=$(echo "$q" | cut -d, -f1,3 | sed 's/^ *//') && driver=$(echo "$q" | cut -d, -f2 | tr -d ' ')
fi
echo "gpu-check: device: $device; driver: $driver"

missing=""
for m in grpc jansson libzip libxxhash zlib jemalloc libmicrohttpd criterion; do
    pkg-config --exists "$m" 2>/dev/null || missing="$missing $m"
done
if [ -n "$missing" ]; then
    echo "gpu-check: the build needs these pkg-config modules, missing here:$missing" >&2
    echo "gpu-check: on Debian 12, run scripts/install-deps.sh first" >&2
    exit 1
fi

step() { # name, command...: runs it, its log in $out/name.log
    local name="$1"; shift
    if "$@" >"$out/$name.log" 2>&1; then echo "gpu-check: $name: ok"; return 0; fi
    echo "gpu-check: $name: FAILED (last lines of $out/$name.log below)" >&2
    tail -n 30 "$out/$name.log" >&2
    return 1
}

step configure cmake -S . -B build-gpu -DFS_WITH_CUDA=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo || exit 1
step build cmake --build build-gpu -j "$jobs" --target test_cuda test_gpu_serve bench_gpu featstore || exit 1

# the GPU tests: test_cuda exits 77 (skipped) without a device, with its reason
(cd build-gpu && ctest -R '^test_cuda' --output-on-failure -V) >"$out/tests.log" 2>&1
tests_rc=$?
passed=$(grep -c -E '^[0-9]+/[0-9]+ Test +#[0-9]+: .* Passed' "$out/tests.log")
failed=$(grep -c -E '^[0-9]+/[0-9]+ Test +#[0-9]+: .*(Failed|Exception|Timeout)' "$out/tests.log")
skipped=$(grep -c -E '^[0-9]+/[0-9]+ Test +#[0-9]+: .*Skipped' "$out/tests.log")
synthesis=$(grep -h 'Synthesis' "$out/tests.log" | tail -1)
reason=$(grep -h -m1 '^.*SKIPPED: ' "$out/tests.log" | sed 's/^.*SKIPPED: //')
# the serving path on the real GPUs (without FEATSTORE_SIM_GPUS it serves --topology detect)
env -u FEATSTORE_SIM_GPUS build-gpu/tests/test_gpu_serve --jobs=1 >"$out/serve.log" 2>&1
serve_rc=$?
serve=$(grep -h 'Synthesis' "$out/serve.log" | tail -1)
[ "$serve_rc" = 0 ] || failed=$((failed + 1))

results=""
if [ "$bench" = 1 ]; then
    build-gpu/bench/bench_gpu >"$out/bench.log" 2>"$out/bench.err"
    bench_rc=$?
    results=$(grep '^RESULT' "$out/bench.log")
    [ "$bench_rc" = 0 ] || failed=$((failed + 1))
fi

echo
echo "==== featstore GPU check ===="
echo "device:  $device"
echo "driver:  $driver"
echo "tests:   $passed passed, $failed failed, $skipped skipped${reason:+ ($reason)}"
[ -n "$synthesis" ] && echo "         test_cuda: ${synthesis#*Synthesis: }"
[ -n "$serve" ] && echo "         test_gpu_serve (real CUDA IPC): ${serve#*Synthesis: }"
[ -n "$results" ] && echo "$results"
echo "logs:    $out/"
if [ "$failed" -gt 0 ] || { [ "$tests_rc" != 0 ] && [ "$skipped" = 0 ]; }; then exit 1; fi
if [ "$skipped" -gt 0 ]; then exit 77; fi
exit 0
