#!/usr/bin/env bash
# Installs the Debian 12 packages featstore needs, by purpose:
#   install-deps.sh build   building featstore and running the serving demo
#                           (Quick start 1; the default)
#   install-deps.sh test    the above, plus what the test suite, the fuzz and
#                           sanitizer builds and the Python client's tests use
#                           (Quick start 2)
# Idempotent: when every package is already installed it touches nothing.
# CUDA is optional and not installed here: the build uses nvcc when it finds
# one (/usr/local/cuda/bin/nvcc or $CUDACXX) and builds the CPU twins only
# otherwise. The Python client itself needs only python3 and python3-numpy.
set -euo pipefail

BUILD=(
  gcc make libc6-dev # the C compiler (build-essential's g++ and dpkg-dev are test-only, below)
  cmake             # the build
  pkg-config        # finds the libraries below
  zlib1g-dev        # gzip input for the importers
  libzip-dev        # .npz (zip) archives
  libjansson-dev    # the dataset manifest (JSON)
  libxxhash-dev     # file checksums (xxh3)
  libjemalloc-dev   # memory-tier arenas
  libgrpc-dev       # the remote transport (gRPC C core)
  nanopb            # nanopb_generator.py: C code for featstore.proto
  libnanopb-dev     # pb.h and libprotobuf-nanopb.a
  libmicrohttpd-dev # the /metrics and /healthz endpoint
  liburing-dev      # the disk tier's reads (io_uring; a pread pool where it is refused)
  libmetis-dev      # featstore partition --method metis (optional: the build goes without it)
  bc                # the demo's summary arithmetic
)

TEST=(
  build-essential   # g++ (the public headers compile as C++) and dpkg-dev (cpack's .deb dependencies)
  libcriterion-dev  # the test framework
  protobuf-compiler # protoc: Python stubs for the third-party client test
  python3-protobuf  # the third-party gRPC client's messages
  python3-grpcio    # the third-party gRPC client
  openssl           # a throw-away CA and certificates for the TLS tests (tests/lib/make_test_certs.sh)
  systemd           # systemd-analyze verify on packaging/featstore.service (tests/package/test_service.py)
  python3-prometheus-client # parses /metrics strictly (tests/lib/check_exposition.py); no Prometheus server
  python3-yaml      # test_dashboard, test_deploy_manifests read the compose, Prometheus and k8s files
  python3-numpy     # numpy reads our .npy files and writes datasets we read; the Python client
  python3-xxhash    # featstore.write_dataset: the files' xxh3 checksums (and its tests)
  python3-torch     # GraphSAGE trained through the Python client (test_python)
  python3-pytest    # the Python tests under pytest too (tests/conftest.py; ctest runs them as scripts)
  python3-scipy     # bench_propagate: scipy.sparse CSR @ dense, the baseline it runs beside
  python3-venv      # scripts/pyg-venv.sh and the install test: venvs over Debian's packages
  python3-setuptools # pip install ./client-lib/python without build isolation (the install test)
  python3-wheel
  python3-aiohttp   # torch_geometric's dependencies, from Debian rather than PyPI:
  python3-fsspec    #   aiohttp, fsspec, jinja2, tqdm (psutil, pyparsing, requests and
  python3-jinja2    #   xxhash come with the packages above)
  python3-tqdm
  python3-psutil
  python3-requests
  etcd-server       # a private etcd per cluster test (tests/lib/test_etcd.h)
  etcd-client       #   etcdctl, to look into it by hand
  clang             # the fuzz build (build-fuzz, tests/fuzz) is clang's libFuzzer
  libclang-rt-dev   # libFuzzer and clang's ASan/UBSan runtimes (only recommended by clang)
  docker.io         # test_image: the engine (dockerd, started by the test) and its CLI
  docker-compose    #   Compose 1.29, one of the two Compose versions it brings the stack up with
  debootstrap       #   the image's Debian base, where no registry serves debian:bookworm-slim
                    #   (its Prometheus is Debian's package, installed in an image, not here)
)

case "${1:-build}" in
  build) PACKAGES=("${BUILD[@]}") ;;
  test) PACKAGES=("${BUILD[@]}" "${TEST[@]}") ;;
  *) echo "install-deps: unknown purpose '$1' (expected: build or test)" >&2; exit 2 ;;
esac

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#PACKAGES[@]} packages for '${1:-build}' already installed"
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
