#!/usr/bin/env bash
# scripts/gpu-bundle.sh — the GPU check as a bundle, for a GPU machine that
# can build nothing (issue 52; docs/development.md "GPU check").
#
# On a Debian build machine with nvcc: builds featstore with CUDA for H100 and
# H200 (sm_90, Release) in build-gpu/, and writes a folder (default
# gpu-bundle/, which git ignores) holding the GPU test and benchmark programs
# and the featstore CLI (bin/, stripped), every shared library they need but
# glibc's and the NVIDIA driver's, under its soname (lib/), the test data
# (data/) and run.sh (scripts/gpu-bundle-run.sh), which needs nothing else.
# Ship the folder with the repository and run `sh gpu-bundle/run.sh` there.
#
#   scripts/gpu-bundle.sh [--from BUILD_DIR] [--out DIR] [--max-mib 48]
#
# --from uses a CUDA build that exists (its architectures must include
# sm_90) instead of building build-gpu/: what the ctest test_gpu_bundle does.
# Exit status: 0 with the bundle written; 1 when the build or a check failed
# (a library that cannot be found, a bundle over --max-mib); 77 when there
# is no CUDA compiler (or --from names a build without CUDA).
set -euo pipefail
cd "$(dirname "$0")/.."
from="" out=gpu-bundle max_mib=48
while [ $# -gt 0 ]; do
    case "$1" in
    --from) from="$2"; shift ;;
    --out) out="$2"; shift ;;
    --max-mib) max_mib="$2"; shift ;;
    *) echo "gpu-bundle: unknown option '$1' (--from BUILD_DIR, --out DIR, --max-mib N)" >&2; exit 2 ;;
    esac
    shift
done
programs=(tests/test_cuda tests/test_typed_cuda tests/test_device_sim tests/test_gpu_serve bench/bench_gpu cli/featstore)

if [ -z "$from" ]; then
    if ! command -v nvcc >/dev/null 2>&1 && [ ! -x /usr/local/cuda/bin/nvcc ]; then
        echo "gpu-bundle: no nvcc here: build the bundle where CUDA is installed" >&2
        exit 77
    fi
    from=build-gpu
    mkdir -p "$from"
    echo "gpu-bundle: building $from (CUDA, sm_90, Release); log in $from/bundle-build.log"
    { cmake -S . -B "$from" -DFS_WITH_CUDA=ON -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 &&
      cmake --build "$from" -j "$(nproc)" --target test_cuda test_typed_cuda test_device_sim test_gpu_serve bench_gpu \
          featstore; } >"$from/bundle-build.log" 2>&1 || { tail -n 30 "$from/bundle-build.log" >&2; exit 1; }
fi
if ! "$from/cli/featstore" version | grep -q "CUDA kernels: yes"; then
    echo "gpu-bundle: $from is a build without CUDA kernels" >&2
    exit 77
fi

rm -rf "$out"
mkdir -p "$out/bin" "$out/lib" "$out/data" "$out/logs"
for p in "${programs[@]}"; do
    install -m 0755 "$from/$p" "$out/bin/"
    strip --strip-unneeded "$out/bin/$(basename "$p")"
done

# glibc's libraries and the NVIDIA driver's stay the machine's
glibc='^(ld-linux[^ ]*|libc|libm|libdl|libpthread|librt|libresolv|libutil|libanl|libmvec)\.so'
driver='^(libcuda|libnvidia-[^ ]*)\.so'
missing=""
for p in "$out"/bin/*; do
    while read -r soname arrow path _; do
        [ "$arrow" = "=>" ] || continue
        if echo "$soname" | grep -Eq "$glibc|$driver"; then continue; fi
        if [ "$path" = "not" ]; then missing="$missing $soname"; continue; fi
        [ -e "$out/lib/$soname" ] || cp -L "$path" "$out/lib/$soname"
    done < <(ldd "$p")
done
[ -z "$missing" ] || { echo "gpu-bundle: libraries not found here:$missing" >&2; exit 1; }
cp -r tests/data/. "$out/data/"
install -m 0755 scripts/gpu-bundle-run.sh "$out/run.sh"

mib=$(du -sm "$out" | cut -f1)
echo "gpu-bundle: $out: ${#programs[@]} programs, $(ls "$out/lib" | wc -l) libraries, ${mib} MiB"
if [ "$mib" -gt "$max_mib" ]; then
    echo "gpu-bundle: $out is ${mib} MiB, over ${max_mib} MiB" >&2
    exit 1
fi
