#!/usr/bin/env bash
# Makes the virtual environment featstore.pyg's tests and examples run in:
# torch_geometric 2.8.1 from PyPI over Debian's torch 1.13 (--system-site-packages,
# so torch is never pip-installed), its other dependencies from Debian
# (scripts/install-deps.sh), and this checkout's featstore package (README
# "Set up Python" makes the same venv by hand). Default place: .venv-pyg at
# the repository's root ($FS_PYG_VENV to move it). Idempotent; without PyPI
# it says why and exits 0, and the PyG tests then report themselves skipped.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${FS_PYG_VENV:-$PWD/.venv-pyg}
PYG=torch_geometric==2.8.1


# featstore from this checkout, offline and from a copy (pip would write its
# build files into the source tree); again on every run, so it is current.
install_featstore() {
  local copy
  copy=$(mktemp -d)
  cp -r client-lib/python/. "$copy"
  rm -rf "$copy/build" "$copy"/*.egg-info
  "$VENV/bin/pip" install -q --disable-pip-version-check --no-index --no-deps --no-build-isolation "$copy"
  rm -rf "$copy"
  echo "pyg-venv: featstore $("$VENV/bin/python" -c 'import importlib.metadata as m; print(m.version("featstore"))') installed in $VENV"
}

if "$VENV/bin/python" -c "import torch_geometric, torch; assert torch_geometric.__version__ == '2.8.1'" 2>/dev/null; then
  echo "pyg-venv: $VENV has torch_geometric 2.8.1"
  install_featstore
  exit 0
fi
/usr/bin/python3 -m venv --system-site-packages "$VENV"
if ! "$VENV/bin/pip" install -q --disable-pip-version-check "$PYG"; then
  echo "pyg-venv: could not install $PYG from PyPI: the featstore.pyg tests will be skipped" >&2
  exit 0
fi
"$VENV/bin/python" -c "import torch_geometric, torch; print('pyg-venv: torch_geometric', torch_geometric.__version__, \
'over torch', torch.__version__, 'in $VENV')"
install_featstore
