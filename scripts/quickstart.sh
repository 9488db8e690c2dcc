#!/usr/bin/env bash
# Quick start command 1: install dependencies, build, and run the serving
# demo on the built-in default dataset (scripts/demo.sh): the store serves
# several example trainers over shared memory and gRPC, then stops.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
bash scripts/demo.sh
