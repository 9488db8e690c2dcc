#!/usr/bin/env bash
# Quick start command 1: install what building and the demo need (only
# that: scripts/install-deps.sh build), build without the test suite,
# install featstore onto the system (/usr/local: `featstore` on PATH, the
# client library, headers and featstore.pc), and run the serving demo on the
# built-in default dataset (scripts/demo.sh): the store serves several
# example trainers over shared memory and gRPC, then stops.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh build
bash scripts/build.sh -DFS_BUILD_TESTS=OFF
if [ -w "$(cmake -L -N build 2>/dev/null | sed -n 's/^CMAKE_INSTALL_PREFIX:PATH=//p')" ]; then
  cmake --install build
  ldconfig 2>/dev/null || true   # so the dynamic loader and ctypes find libfeatstore.so.1
else
  echo "quickstart: not installing (the install prefix is not writable: run as root, or cmake --install build --prefix DIR)"
fi
bash scripts/demo.sh
