#!/usr/bin/env bash
# Quick start command 1: install dependencies, build, and run the main job on
# the built-in default datasets: a generated R-MAT graph and Cora (bundled in
# tests/data). At this stage the main job makes the datasets and reports on
# them; the serving demo replaces it once the server lands.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
FS=build/server/featstore
mkdir -p data

echo
echo "== featstore: default dataset (R-MAT scale 18, edge factor 16, 128 float32 features)"
$FS gen rmat --scale 18 --edge-factor 16 --dim 128 --symmetrize --dedup --drop-self-loops \
    --permute --out data/default --force
$FS info data/default

echo
echo "== featstore: Cora, imported from tests/data/cora.npz"
$FS import npz tests/data/cora.npz --out data/cora --force
$FS info data/cora
echo
echo "== GPUs"
$FS devices
