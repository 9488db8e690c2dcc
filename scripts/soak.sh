#!/usr/bin/env bash
# Soak and chaos run against a live server: 16 unix:// + 4 grpc:// trainers
# for 10 minutes (--short: 60 s), 100 SIGKILLs, a truncated and replaced
# dataset file, a server restart; every batch checked. Prints
# `RESULT bench=soak ...` and exits non-zero on a wrong result, a crash or
# a leaked descriptor. See scripts/soak.py for the options.
# Needs a build (scripts/build.sh); ctest runs `--short` as test_soak_short.
set -euo pipefail
cd "$(dirname "$0")/.."
exec /usr/bin/python3 scripts/soak.py "$@"
