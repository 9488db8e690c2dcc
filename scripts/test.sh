#!/usr/bin/env bash
# Quick start command 2: install dependencies, build, run the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
cd build
ctest --output-on-failure --timeout 1200
