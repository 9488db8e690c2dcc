"""conftest.py — the Python tests under pytest, as well as under ctest.

ctest runs each test_*.py under tests/ as a script (its folder's CMakeLists.txt:
``/usr/bin/python3 tests/FOLDER/NAME.py --featstore BUILD/cli/featstore --lib
BUILD/client-lib/libfeatstore.so``). pytest imports them instead, and this
file gives them the same build through the environment:
``$FEATSTORE_BUILD`` (default: the repository's build/) names it,
``$FEATSTORE_BIN`` (its cli/featstore) and ``$FEATSTORE_LIB`` (its
client-lib/libfeatstore.so, which ``import featstore`` then loads) follow
unless set; tests/lib and client-lib/python go first on sys.path. Each
unittest module reads them through fs_serve.pytest_args, and is skipped
whole when the build or a module it needs (numpy, torch, torch_geometric)
is missing::

    bash scripts/build.sh -DFS_BUILD_TESTS=ON
    /usr/bin/python3 -m pytest tests/                      # the suites this Python can run
    .venv-pyg/bin/python -m pytest tests/python/test_pyg.py  # featstore.pyg's (scripts/pyg-venv.sh)

Scripts without test classes (packaging, images, the README, the ABI) are
collected as nothing and run by ctest alone.
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

BUILD = os.path.abspath(os.environ.setdefault("FEATSTORE_BUILD", os.path.join(ROOT, "build")))
os.environ.setdefault("FEATSTORE_BIN", os.path.join(BUILD, "cli", "featstore"))
os.environ.setdefault("FEATSTORE_LIB", os.path.join(BUILD, "client-lib", "libfeatstore.so"))
for path in (os.path.join(ROOT, "client-lib", "python"), os.path.join(HERE, "lib")):
    if path not in sys.path:
        sys.path.insert(0, path)
