#!/usr/bin/env bash
# Installs exactly the Debian 12 packages featstore's build and tests need.
# Idempotent: when every package is already installed it touches nothing.
# CUDA is optional and not installed here: the build uses nvcc when it finds
# one (/usr/local/cuda/bin/nvcc or $CUDACXX) and builds the CPU twins only
# otherwise.
set -euo pipefail

PACKAGES=(
  build-essential   # gcc, make
  cmake             # the build
  pkg-config        # finds the libraries below
  zlib1g-dev        # gzip input for the importers
  libzip-dev        # .npz (zip) archives
  libjansson-dev    # the dataset manifest (JSON)
  libxxhash-dev     # file checksums (xxh3)
  libjemalloc-dev   # memory-tier arenas
  libgrpc-dev       # the remote transport (gRPC C core)
  protobuf-compiler # protoc: Python stubs for the third-party client test
  nanopb            # nanopb_generator.py: C code for featstore.proto
  libnanopb-dev     # pb.h and libprotobuf-nanopb.a
  libmicrohttpd-dev # the /metrics and /healthz endpoint
  python3-protobuf  # tests: the third-party gRPC client's messages
  python3-grpcio    # tests: the third-party gRPC client
  openssl           # tests: a throw-away CA and certificates for the TLS tests (tests/make_test_certs.sh)
  prometheus        # tests: promtool checks the /metrics output
  bc                # the demo's summary arithmetic
  libcriterion-dev  # the test framework
  python3-numpy     # tests: numpy reads our .npy files and writes datasets we read
  python3-xxhash    # featstore.write_dataset: the files' xxh3 checksums (and its tests)
  python3-torch     # tests: GraphSAGE trained through the Python client (test_python)
  python3-scipy     # bench_propagate: scipy.sparse CSR @ dense, the baseline it runs beside
  python3-venv      # scripts/pyg-venv.sh: torch_geometric's venv over Debian's torch (featstore.pyg)
  python3-aiohttp   # torch_geometric's dependencies, from Debian rather than PyPI:
  python3-fsspec    #   aiohttp, fsspec, jinja2, tqdm (psutil, pyparsing, requests and
  python3-jinja2    #   xxhash come with the packages above)
  python3-tqdm
  python3-psutil
  python3-requests
  clang             # tests: the fuzz build (build-fuzz, tests/fuzz) is clang's libFuzzer
  libclang-rt-dev   # tests: libFuzzer and clang's ASan/UBSan runtimes (only recommended by clang)
  dpkg-dev          # cpack -G DEB: dpkg-shlibdeps writes the packages' Depends (test_deb)
  python3-setuptools # pip install ./client-lib/python offline (--no-build-isolation): the build backend
  python3-wheel     #   and the wheel it builds (test_install_venv)
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#PACKAGES[@]} packages already installed"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "install-deps: run as root (missing: ${missing[*]})" >&2; exit 1; }
  SUDO="sudo"
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
