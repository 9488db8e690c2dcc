#!/usr/bin/env bash
# The serving demo (Quick start command 1 runs it after building):
# make the default dataset, start the store with a placement on 4 simulated
# GPUs (NVLink pairs, 20% of the feature bytes each), run several example
# trainers for mini-batches of sample_gather — most over shared memory, each
# on its own simulated GPU, one over gRPC — print a summary and a few
# metrics, stop the store.
set -euo pipefail
cd "$(dirname "$0")/.."
FS=build/cli/featstore
TRAINER=build/examples/featstore-trainer
DATA=${FEATSTORE_DATA:-data/default}
LOCAL_TRAINERS=${LOCAL_TRAINERS:-3}
BATCHES=${BATCHES:-40}
RUN=$(mktemp -d /tmp/featstore-demo.XXXXXX)
SOCK=$RUN/featstore.sock
SERVER=""
cleanup() {
  [ -n "$SERVER" ] && kill -TERM "$SERVER" 2>/dev/null && wait "$SERVER" 2>/dev/null || true
  rm -rf "$RUN"
}
trap cleanup EXIT

if [ ! -f "$DATA/manifest.json" ]; then
  echo "== making the default dataset: R-MAT scale 18 (262k nodes), 128 float32 features"
  mkdir -p "$(dirname "$DATA")"
  $FS gen rmat --scale 18 --edge-factor 16 --dim 128 --symmetrize --dedup --drop-self-loops --permute \
      --out "$DATA" --force
fi
$FS info "$DATA" --no-verify | sed 's/^/   /'

echo "== starting the store"
$FS serve "$DATA" --socket "$SOCK" --listen 127.0.0.1:0 --metrics 127.0.0.1:0 \
    --topology "${TOPOLOGY:-nvlink-pairs}" --gpu-budget "${GPU_BUDGET:-0.2}" > "$RUN/ready" 2> "$RUN/server.log" &
SERVER=$!
for _ in $(seq 100); do grep -q READY "$RUN/ready" 2>/dev/null && break; sleep 0.1; done
grep -q READY "$RUN/ready" || { cat "$RUN/server.log"; echo "the server did not start" >&2; exit 1; }
sed 's/^/   /' "$RUN/server.log"
GRPC=$(sed -n 's/.* grpc=\([0-9.]*:[0-9]*\).*/\1/p' "$RUN/ready")

echo "== running $LOCAL_TRAINERS trainers over shared memory (trainer i on simulated gpu:i-1)${GRPC:+ and 1 over gRPC}, $BATCHES mini-batches each ([15,10,5] x 1024 seeds)"
START=$(date +%s.%N)
PIDS=""
for i in $(seq "$LOCAL_TRAINERS"); do
  $TRAINER "unix://$SOCK" --batches "$BATCHES" --seed "$i" --name "local-$i" --device "gpu:$((i - 1))" \
      > "$RUN/trainer-$i" & PIDS="$PIDS $!"
done
if [ -n "$GRPC" ]; then
  $TRAINER "grpc://$GRPC" --batches "$BATCHES" --seed 99 --name grpc-1 > "$RUN/trainer-grpc" & PIDS="$PIDS $!"
fi
for p in $PIDS; do wait "$p"; done
END=$(date +%s.%N)
cat "$RUN"/trainer-* | sed 's/^/   /'

echo "== summary"
cat "$RUN"/trainer-* | awk -v wall="$(echo "$END - $START" | bc)" '
  { for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
    batches += v["batches"]; rows += v["rows"]; bytes += v["bytes"];
    if (v["p50_ms"] > p50) p50 = v["p50_ms"]; if (v["p99_ms"] > p99) p99 = v["p99_ms"] }
  END { printf "   %d mini-batches in %.2f s: %.1f mini-batches/s, %.2f M rows/s, %.2f GB/s of features\n",
               batches, wall, batches / wall, rows / wall / 1e6, bytes / wall / 1e9;
        printf "   latency per mini-batch (worst trainer): p50 %.1f ms, p99 %.1f ms\n", p50, p99 }'
$FS stats "unix://$SOCK" > "$RUN/metrics"
echo "   feature bytes read, by reader and source tier (sim_device = a simulated GPU's copy):"
grep '^featstore_feature_bytes_read_total' "$RUN/metrics" | awk '$2 > 0 { printf "     %s %.1f MB\n", $1, $2 / 1e6 }'

echo "== a few metrics lines (featstore stats unix://...)"
grep -E '^featstore_requests_total\{method="SampleGather"|^featstore_connected_clients|^featstore_tier_used_bytes|^featstore_dataset_(nodes|edges)' \
  "$RUN/metrics" | sed 's/^/   /'
echo "== the plan's prediction for gpu:0 next to what its trainer read (shares of feature bytes)"
grep -E '^featstore_placement_(predicted|measured)_share\{reader="gpu0"' "$RUN/metrics" | sed 's/^/   /'

echo "== stopping the store"
kill -TERM "$SERVER"
wait "$SERVER"
SERVER=""
tail -2 "$RUN/server.log" | sed 's/^/   /'
