#!/bin/sh
# run.sh — the featstore GPU check, run from its bundle (scripts/gpu-bundle.sh
# copies this file into the bundle as run.sh; issue 52).
#
# On a GPU machine that can build nothing: every program and library it needs
# is in the bundle (bin/, lib/), so this needs only a POSIX sh, glibc and the
# NVIDIA driver; nvidia-smi, timeout and python3 are used when present. It
# runs the GPU tests (the CUDA engines against their CPU twins, bit for bit;
# test_gpu_serve through real CUDA IPC), the CPU twins alone (which run
# anywhere), and bench_gpu, then prints the report scripts/gpu-check.sh
# prints: device, driver, NCCL, pass/fail/skip counts, each program's
# synthesis and the RESULT lines. Logs go to $OUT when it is set, else to
# the bundle's logs/.
#
#   sh run.sh                  (or: OUT=/some/dir sh gpu-bundle/run.sh)
#
# Exit status: 0 when every GPU test passed on a GPU; 1 when something
# failed; 77 when there is no usable GPU (the CPU twins still ran).
case $0 in */*) here=${0%/*} ;; *) here=. ;; esac
here=$(cd "$here" && pwd)
out=${OUT:-$here/logs}
[ -d "$out" ] || mkdir -p "$out" || { echo "run.sh: cannot make $out for the logs" >&2; exit 1; }
LD_LIBRARY_PATH="$here/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
FEATSTORE_TEST_BIN="$here/bin/featstore"
FEATSTORE_TEST_DATA="$here/data"
TMPDIR=${TMPDIR:-/tmp}
export LD_LIBRARY_PATH FEATSTORE_TEST_BIN FEATSTORE_TEST_DATA TMPDIR
unset FEATSTORE_SIM_GPUS FS_TEST_NEEDS_GPU

# NCCL (loaded with dlopen at a broadcast between GPUs): the system's, else PyTorch's wheel's
nccl="not found: a broadcast between GPUs falls back to peer copies"
if command -v python3 >/dev/null 2>&1; then
    dir=$(python3 -c 'import nvidia.nccl as n; print(list(n.__path__)[0] + "/lib")' 2>/dev/null)
    if [ -n "$dir" ] && [ -e "$dir/libnccl.so.2" ]; then
        LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$dir"
        nccl="$dir/libnccl.so.2 (PyTorch's)"
    fi
fi
for dir in /usr/lib/x86_64-linux-gnu /usr/local/cuda/lib64 /usr/local/cuda/lib /usr/lib64; do
    [ -e "$dir/libnccl.so.2" ] && nccl="$dir/libnccl.so.2" && break
done

device="none"; driver="none"
if command -v nvidia-smi >/dev/null 2>&1; then
    line=$(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null)
    first=${line%%
*}
    if [ -n "$first" ]; then
        IFS=, read -r name drv mem <<EOF
$first
EOF
        device="$name,$mem"; driver=$(echo $drv)
    fi
fi
limit=""
command -v timeout >/dev/null 2>&1 && limit="timeout 240"

passed=0; failed=0; skipped=0; reason=""; lines=""
# A program's log: its synthesis line and its skip reason, if any.
read_log() {
    synth=""; why=""
    while IFS= read -r l; do
        case $l in
        *"Synthesis: "*) synth=${l#*Synthesis: } ;;
        "SKIPPED: "*) why=${l#SKIPPED: } ;;
        esac
    done <"$1"
}
# check NAME RC: counts one program's outcome from its status and log.
check() {
    read_log "$out/$1.log"
    status=$2
    case $synth in "Tested: 0 "*) [ "$status" = 0 ] && status="0, but no test ran" ;; esac
    case $status in
    0) passed=$((passed + 1)); lines="$lines
         $1: ${synth:-passed}" ;;
    77) skipped=$((skipped + 1)); [ -z "$reason" ] && reason=$why; lines="$lines
         $1: skipped ($why)" ;;
    *) failed=$((failed + 1)); lines="$lines
         $1: FAILED, status $status ${synth:+($synth)} (log: $out/$1.log)" ;;
    esac
}
bin=$here/bin

# the GPU tests: the CUDA engines against their CPU twins (77 without a GPU, saying why)
(FS_TEST_NEEDS_GPU=1; export FS_TEST_NEEDS_GPU; exec $limit "$bin/test_cuda" --jobs=1) >"$out/test_cuda.log" 2>&1
check test_cuda $?
(FS_TEST_NEEDS_GPU=1; export FS_TEST_NEEDS_GPU; exec $limit "$bin/test_typed_cuda" --filter='typed_cuda/*' --jobs=1) \
    >"$out/test_typed_cuda.log" 2>&1
check test_typed_cuda $?
# the serving path on the real GPUs: serve --topology detect, trainers on CUDA IPC
if [ "$device" != none ]; then
    (exec $limit "$bin/test_gpu_serve" --jobs=1) >"$out/test_gpu_serve.log" 2>&1
    check test_gpu_serve $?
else
    echo "SKIPPED: no GPU (nvidia-smi finds none)" >"$out/test_gpu_serve.log"
    check test_gpu_serve 77
fi
# the CPU twins, everywhere: the simulated GPUs and the no-device answers
(FEATSTORE_SIM_GPUS=2; export FEATSTORE_SIM_GPUS; exec $limit "$bin/test_device_sim" --jobs=1) \
    >"$out/twin_device_sim.log" 2>&1
check twin_device_sim $?
(FEATSTORE_SIM_GPUS=2; export FEATSTORE_SIM_GPUS; exec $limit "$bin/test_typed_cuda" --filter='typed_sim/*' --jobs=1) \
    >"$out/twin_typed_sim.log" 2>&1
check twin_typed_sim $?
(exec $limit "$bin/test_cuda" --filter='cuda/without_a_device*' --jobs=1) >"$out/twin_no_device.log" 2>&1
check twin_no_device $?

results=""
if [ "$device" != none ]; then
    (exec $limit "$bin/bench_gpu") >"$out/bench_gpu.log" 2>"$out/bench_gpu.err"
    rc=$?
    while IFS= read -r l; do
        case $l in RESULT*) results="$results
$l" ;; esac
    done <"$out/bench_gpu.log"
    [ "$rc" = 0 ] || { failed=$((failed + 1)); lines="$lines
         bench_gpu: FAILED, status $rc (log: $out/bench_gpu.err)"; }
fi

echo
echo "==== featstore GPU check (bundle) ===="
echo "device:  $device"
echo "driver:  $driver"
echo "nccl:    $nccl"
echo "tests:   $passed passed, $failed failed, $skipped skipped${reason:+ ($reason)}$lines"
[ -n "$results" ] && echo "${results#?}"
echo "logs:    $out/"
[ "$failed" -gt 0 ] && exit 1
[ "$skipped" -gt 0 ] && exit 77
exit 0
