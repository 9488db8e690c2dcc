#!/usr/bin/env bash
# A replicated cluster under failure: 4 shards at R = 2, 8 trainers answering
# the shards' parts in process and 4 over gRPC, every batch checked against
# one server's; 20 shard kills (SIGKILL, each restarted) and an etcd restart
# in 10 minutes (--short: 60 s, 2 kills). Prints `RESULT bench=cluster_soak
# ...` and exits non-zero on a wrong or failed batch. See
# scripts/cluster_soak.py for the options. Needs etcd and a build
# (scripts/build.sh); ctest runs `--short` as test_cluster_soak_short.
set -euo pipefail
cd "$(dirname "$0")/.."
exec /usr/bin/python3 scripts/cluster_soak.py "$@"
