#!/usr/bin/env bash
# Installs the same-run peers of bench/peers/peer_loader.py, outside the
# repository and outside the Quick start and CI (docs: bench/README.md,
# "Peers"). Two virtual environments under $FS_PEERS_DIR (default
# ~/.cache/featstore-peers):
#   pyg/  over Debian's torch 1.13 (--system-site-packages): torch_geometric
#         2.8.1 with torch-sparse 0.6.18 and torch-scatter 2.1.2 built from
#         source (PyG's sampler backend; pyg-lib is not on PyPI; ~10 min on
#         2 cores);
#   dgl/  a venv of its own with PyPI's torch 2.2.1 (DGL refuses Debian's
#         torch): dgl 2.1.0 with GraphBolt (~5 GB), and torch_geometric for
#         featstore's contender in the train task.
# Debian's OpenBLAS (OpenMP build) replaces the reference BLAS Debian's torch
# would otherwise multiply with (5-10x slower in the train task's model).
# Idempotent: a venv whose imports already work is left alone.
set -euo pipefail
DIR=${FS_PEERS_DIR:-$HOME/.cache/featstore-peers}
mkdir -p "$DIR"

apt_need=(python3-venv python3-dev libtorch-dev pybind11-dev python3-torch python3-scipy libopenblas0-openmp
          python3-aiohttp python3-fsspec python3-jinja2 python3-tqdm python3-psutil python3-requests)
missing=()
for p in "${apt_need[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q && apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

if ! "$DIR/pyg/bin/python" -c "import torch_geometric, torch_sparse" 2>/dev/null; then
  echo "peers: PyG + torch-sparse in $DIR/pyg (builds torch-sparse from source)"
  /usr/bin/python3 -m venv --system-site-packages "$DIR/pyg"
  "$DIR/pyg/bin/pip" install -q torch_geometric==2.8.1
  MAX_JOBS=$(nproc) "$DIR/pyg/bin/pip" install -q --no-build-isolation torch-scatter==2.1.2 torch-sparse==0.6.18
fi

if ! "$DIR/dgl/bin/python" -c "import dgl, dgl.graphbolt" 2>/dev/null; then
  echo "peers: DGL 2.1.0 + GraphBolt in $DIR/dgl (PyPI's torch 2.2.1, ~5 GB)"
  /usr/bin/python3 -m venv "$DIR/dgl"
  "$DIR/dgl/bin/pip" install -q torch==2.2.1 dgl==2.1.0 torchdata==0.7.1 "numpy<2" "pandas<2.3" scipy networkx \
      psutil tqdm requests pydantic pyyaml
fi
# featstore's contender in the train task computes with PyG on DGL's torch
# (peer_loader.py --tasks train): torch_geometric is pure Python and leaves
# that torch as it is.
if ! "$DIR/dgl/bin/python" -c "import torch_geometric" 2>/dev/null; then
  "$DIR/dgl/bin/pip" install -q torch_geometric==2.8.1
fi
echo "peers: ready in $DIR (pyg: $("$DIR/pyg/bin/python" -c 'import torch_geometric as g; print(g.__version__)'), \
dgl: $("$DIR/dgl/bin/python" -c 'import dgl; print(dgl.__version__)' 2>/dev/null))"
