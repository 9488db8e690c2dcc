#!/usr/bin/env bash
# Quick start command 2: install dependencies, then build and test in three
# stages, each in a build directory of its own (docs/development.md "Tests"):
#   1. build/       the normal build and the whole test suite (ctest);
#   2. build-fuzz/  clang + libFuzzer + ASan/UBSan: every harness of
#                   tests/fuzz runs its seed corpus, then fuzzes for
#                   FS_FUZZ_SECONDS (default 10) each, as ctest tests;
#   3. build-asan/  gcc with ASan + UBSan (Debug): the whole suite again,
#                   without the "slow" label (the client-only build and the
#                   soak add nothing under sanitizers but minutes) and the
#                   "pyg" label (tests/python/CMakeLists.txt says why).
# Stops at the first stage that fails.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)
bash scripts/install-deps.sh test
bash scripts/pyg-venv.sh   # torch_geometric for featstore.pyg's tests (skipped without it)

bash scripts/build.sh -DFS_BUILD_TESTS=ON
(cd build && ctest --output-on-failure --timeout 1200)

cmake -S . -B build-fuzz -DCMAKE_C_COMPILER=clang -DFS_FUZZ=ON -DFS_WITH_CUDA=OFF \
      -DFS_FUZZ_SECONDS="${FS_FUZZ_SECONDS:-10}"
cmake --build build-fuzz -j "$jobs"
(cd build-fuzz && ctest --output-on-failure -j "$jobs")

cmake -S . -B build-asan -DFS_SANITIZE=address,undefined -DCMAKE_BUILD_TYPE=Debug -DFS_WITH_CUDA=OFF
cmake --build build-asan -j "$jobs"
# UBSan only reports by default: halting makes undefined behaviour a failure.
# LeakSanitizer skips only the third-party leaks tests/lib/lsan.supp names.
lsan_supp="$PWD/tests/lib/lsan.supp"
(cd build-asan && UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
    LSAN_OPTIONS="suppressions=$lsan_supp:print_suppressions=0" \
    ctest --output-on-failure --timeout 1200 -LE "slow|pyg")
