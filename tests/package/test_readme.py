#!/usr/bin/python3
"""test_readme.py — README.md's recipes, run as written, in order, as a new
user would paste them (ctest: test_readme).

    /usr/bin/python3 tests/package/test_readme.py --source . --featstore BUILD/cli/featstore \
        --lib BUILD/client-lib/libfeatstore.so.1 --work DIR

Every ```sh and ```python block under "## Recipes" runs, except a block
right after a line ``<!-- not run by tests/package/test_readme.py: REASON -->``
(the reason is printed). A block right after
``<!-- tests/package/test_readme.py expects: REGEX -->`` must also print a line
that REGEX matches (what the recipe says it shows: an accuracy, counters
that moved). sh blocks run with ``bash -euo pipefail``, python
blocks with the venv's python that the first recipe makes, both in
WORK/src: a copy of client-lib/python beside links to examples/ and
scripts/, so pip's build files stay out of the source tree.

What differs from a new user's machine, and only this:

- places: the recipes' absolute places and ports are moved into WORK by
  plain text replacement (PLACES below), and ``box.example``, the server's
  name in the TLS recipe, becomes ``localhost``;
- ``featstore`` is the build's (its directory first on PATH) and the client
  library the build's (FEATSTORE_LIB), where a user's come from Quick
  start 1's ``cmake --install``;
- ``apt-get install`` only checks that its packages are installed (the test
  installs nothing; scripts/install-deps.sh test must have);
- pip runs offline (PIP_NO_INDEX=1, and without build isolation, which
  would fetch setuptools), and PYTHONPATH shows it the PyG venv's
  torch_geometric (scripts/pyg-venv.sh), so the ``[pyg]`` extra finds it
  installed instead of downloading it;
- what a recipe downloads is made first, from the repository: PyG's
  Planetoid Cora files from tests/data/cora.npz (so ``Planetoid`` finds
  them and downloads nothing) and a small soc-LiveJournal1.txt.gz;
- ``featstore serve`` runs in the background until its READY line; a later
  serve line (a recipe's other way to serve) stops the one before; the last
  is stopped at the end, and must exit 0.

Exit status: 0 pass, 1 fail, 77 (ctest's skip) without the PyG venv or
openssl. ~60 s on 2 cores.
"""
import argparse
import gzip
import os
import pickle
import re
import shutil
import socket
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))  # the repository (this is tests/package/)
SKIP = 77
NOT_RUN = re.compile(r"<!-- not run by tests/package/test_readme.py: (.+?) -->")
EXPECTS = re.compile(r"<!-- tests/package/test_readme.py expects: (.+?) -->")
FENCE = re.compile(r"^```(\w*)\s*$")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def recipes(readme):
    """The (language, text, reason-not-run or None, expected regex or None,
    heading) of each fenced block under "## Recipes", in order."""
    lines = open(readme).read().split("## Recipes", 1)[1].split("\n## ", 1)[0].splitlines()
    out, heading, skip, expects, i = [], "", None, None, 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("### "):
            heading = line[4:]
        not_run, expected, fence = NOT_RUN.search(line), EXPECTS.search(line), FENCE.match(line)
        if not_run:
            skip = not_run.group(1)
        elif expected:
            expects = re.compile(expected.group(1), re.M)
        elif fence:
            end = next(j for j in range(i + 1, len(lines)) if lines[j].startswith("```"))
            out.append((fence.group(1), "\n".join(lines[i + 1:end]) + "\n", skip, expects, heading))
            skip, expects, i = None, None, end
        elif line.strip():
            skip = expects = None
        i += 1
    return out


def write_planetoid_cora(root):
    """PyG's Planetoid raw files for Cora (root/Cora/raw/ind.cora.*), made
    from tests/data/cora.npz: the layout torch_geometric.io.planetoid reads
    (x/allx/tx sparse features, y/ally/ty one-hot labels, the graph as
    adjacency lists, test.index), 140 training, 500 validation and 1000 test
    nodes, as Planetoid's split has."""
    import scipy.sparse as sp
    z = np.load(os.path.join(ROOT, "tests", "data", "cora.npz"), allow_pickle=False)
    adj = sp.csr_matrix((z["adj_data"], z["adj_indices"], z["adj_indptr"]), shape=tuple(z["adj_shape"]))
    feat = sp.csr_matrix((z["attr_data"], z["attr_indices"], z["attr_indptr"]), shape=tuple(z["attr_shape"]))
    labels = z["labels"]
    n, classes = feat.shape[0], int(labels.max()) + 1
    onehot = np.eye(classes, dtype=np.float32)[labels]
    und = (adj + adj.T).tocsr()
    graph = {v: und.indices[und.indptr[v]:und.indptr[v + 1]].tolist() for v in range(n)}
    test = np.arange(n - 1000, n)
    parts = {"x": feat[:140], "allx": feat[:n - 1000], "tx": feat[n - 1000:], "y": onehot[:140],
             "ally": onehot[:n - 1000], "ty": onehot[n - 1000:], "graph": graph}
    raw = os.path.join(root, "Cora", "raw")
    os.makedirs(raw)
    for name, value in parts.items():
        with open(os.path.join(raw, f"ind.cora.{name}"), "wb") as f:
            pickle.dump(value, f)
    np.savetxt(os.path.join(raw, "ind.cora.test.index"), test, fmt="%d")  # tx's rows are in this order


def write_edge_list(path):
    """A small SNAP-style gzipped edge list with sparse ids (the recipe
    compacts them)."""
    rng = np.random.default_rng(0)
    ids = rng.choice(10**9, size=2000, replace=False)
    edges = ids[rng.integers(0, len(ids), size=(20000, 2))]
    with gzip.open(path, "wt") as f:
        f.write("# Directed graph: made by tests/package/test_readme.py\n# FromNodeId\tToNodeId\n")
        f.writelines(f"{a}\t{b}\n" for a, b in edges)


# Runs in front of every sh block: `apt-get install` checks that the packages
# are installed (scripts/install-deps.sh test installs them: a test installs
# nothing), `featstore serve` runs in the background until READY (stopping
# the one before), everything else as is.
SH_PRELUDE = r"""
apt-get() {
  [ "${1:-}" = install ] || { echo "test_readme: only apt-get install is expected, not: apt-get $*" >&2; return 1; }
  shift
  local p
  for p in "$@"; do
    case "$p" in -*) continue ;; esac
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
      { echo "test_readme: $p is not installed (scripts/install-deps.sh test should install it)" >&2; return 1; }
  done
  echo "apt-get install: already installed: $*"
}
featstore() {
  if [ "${1:-}" != serve ]; then command featstore "$@"; return; fi
  __fs_stop
  local n=$(( $(cat "$FS_WORK/serves" 2>/dev/null || echo 0) + 1 ))
  echo $n > "$FS_WORK/serves"
  command featstore "$@" > "$FS_WORK/serve-$n.out" 2> "$FS_WORK/serve-$n.err" &
  echo $! > "$FS_WORK/serve.pid"
  for _ in $(seq 600); do
    grep -q '^READY' "$FS_WORK/serve-$n.out" && { echo "serve $n: $(head -1 "$FS_WORK/serve-$n.out")"; return; }
    kill -0 $! 2>/dev/null || { cat "$FS_WORK/serve-$n.err" >&2; echo "featstore serve exited before READY" >&2; return 1; }
    sleep 0.1
  done
  echo "featstore serve printed no READY line in 60 s" >&2; return 1
}
__fs_stop() {
  [ -s "$FS_WORK/serve.pid" ] || return 0
  local pid; pid=$(cat "$FS_WORK/serve.pid"); : > "$FS_WORK/serve.pid"
  kill -TERM "$pid" 2>/dev/null || return 0
  for _ in $(seq 300); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
  echo "featstore serve (pid $pid) did not stop in 30 s" >&2; kill -KILL "$pid"; return 1
}
"""


class Runner:
    def __init__(self, args, work):
        self.args, self.work = args, work
        self.src = os.path.join(work, "src")
        self.venv = os.path.join(work, "venv")
        self.places = {  # longest first: "/data/" before any shorter place
            "~/featstore-venv": self.venv,
            "/run/featstore.sock": os.path.join(work, "featstore.sock"),
            "/data/": os.path.join(work, "data") + "/",
            "/tmp/pyg": os.path.join(work, "pyg"),
            "0.0.0.0:50051": f"127.0.0.1:{free_port()}",
            "127.0.0.1:9464": f"127.0.0.1:{free_port()}",
            "box.example": "localhost",
        }
        port = self.places["0.0.0.0:50051"].rsplit(":", 1)[1]
        self.places[":50051"] = ":" + port  # what clients dial
        bindir = os.path.dirname(os.path.abspath(args.featstore))
        self.env = {"PATH": f"{bindir}:/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin", "HOME": work,
                    "LANG": "C.UTF-8", "TMPDIR": work, "FEATSTORE_LIB": os.path.abspath(args.lib),
                    "PIP_NO_INDEX": "1", "PIP_NO_BUILD_ISOLATION": "0", "PIP_DISABLE_PIP_VERSION_CHECK": "1", "FS_WORK": work}

    def place(self, text):
        for old, new in self.places.items():
            text = text.replace(old, new)
        return text

    def prepare(self, pyg_site):
        os.makedirs(os.path.join(self.work, "data"))
        shutil.copytree(os.path.join(ROOT, "client-lib", "python"), os.path.join(self.src, "client-lib", "python"),
                        ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
        for d in ("examples", "scripts", "tests"):
            os.symlink(os.path.join(ROOT, d), os.path.join(self.src, d))
        write_planetoid_cora(os.path.join(self.work, "pyg"))
        write_edge_list(os.path.join(self.src, "soc-LiveJournal1.txt.gz"))
        # torch_geometric as if pip had downloaded it: the PyG venv's copy on
        # PYTHONPATH, alone (that venv may hold a featstore of its own)
        shown = os.path.join(self.work, "pyg-site")
        os.makedirs(shown)
        for name in os.listdir(pyg_site):
            if name.startswith("torch_geometric"):
                os.symlink(os.path.join(pyg_site, name), os.path.join(shown, name))
        self.env["PYTHONPATH"] = shown

    def run(self, n, lang, text, expects):
        text = self.place(text)
        if lang == "python":
            path = os.path.join(self.work, f"recipe-{n}.py")
            with open(path, "w") as f:
                f.write(text)
            cmd = [os.path.join(self.venv, "bin", "python"), path]
        else:
            cmd = ["bash", "-euo", "pipefail", "-c", SH_PRELUDE + text]
        t0 = time.monotonic()
        r = subprocess.run(cmd, cwd=self.src, env=self.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True, timeout=600)
        out = r.stdout.strip()
        print(f"[{time.monotonic() - t0:5.1f} s] exit {r.returncode}")
        print("  " + "\n  ".join(out.splitlines()[-25:]) if out else "  (no output)", flush=True)
        if r.returncode == 0 and expects and not expects.search(r.stdout):
            print(f"  its output has no line matching {expects.pattern!r}")
            return 1
        return r.returncode

    def stop_server(self):
        r = subprocess.run(["bash", "-c", SH_PRELUDE + "__fs_stop"], env=self.env, capture_output=True, text=True)
        n = open(os.path.join(self.work, "serves")).read().strip() if os.path.exists(
            os.path.join(self.work, "serves")) else "0"
        print(f"servers started: {n}; the last stopped: {r.returncode == 0}")
        return r.returncode


def pyg_site_packages():
    """The PyG venv's site-packages (scripts/pyg-venv.sh), or None."""
    venv = os.path.abspath(os.environ.get("FS_PYG_VENV", os.path.join(ROOT, ".venv-pyg")))
    py = os.path.join(venv, "bin", "python")
    if not os.path.exists(py):
        return None
    r = subprocess.run([py, "-c", "import torch_geometric, sysconfig; print(sysconfig.get_paths()['purelib'])"],
                       capture_output=True, text=True)
    return r.stdout.strip() if r.returncode == 0 else None


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--source", default=ROOT)
    p.add_argument("--featstore", required=True)
    p.add_argument("--lib", required=True)
    p.add_argument("--work", required=True, help="scratch directory (emptied first, removed on success)")
    args = p.parse_args()
    pyg_site = pyg_site_packages()
    if not pyg_site:
        print("SKIP: no torch_geometric venv (run scripts/pyg-venv.sh): the recipes train with PyG")
        return SKIP
    if not shutil.which("openssl"):
        print("SKIP: no openssl (apt-get install openssl): the TLS recipe makes its certificates with it")
        return SKIP
    work = os.path.abspath(args.work)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    runner = Runner(args, work)
    runner.prepare(pyg_site)
    blocks = recipes(os.path.join(args.source, "README.md"))
    failed, ran = [], 0
    try:
        for n, (lang, text, skip, expects, heading) in enumerate(blocks, 1):
            print(f"\n== recipe {n} ({heading}, {lang or 'text'})" + (f": not run: {skip}" if skip else ""))
            if skip or lang not in ("sh", "python"):
                continue
            print("  " + "\n  ".join(text.strip().splitlines()))
            ran += 1
            if runner.run(n, lang, text, expects) != 0:
                failed.append(f"recipe {n} ({heading})")
                break  # the next recipes build on this one
    finally:
        if runner.stop_server() != 0:
            failed.append("the last server did not stop cleanly")
    # a README that lost its recipes must not pass by running none of them
    if ran < 8:
        failed.append(f"only {ran} recipes ran (expected at least 8: the README's recipes are its new user's path)")
    if failed:
        print("FAIL: " + "; ".join(failed))
        return 1
    shutil.rmtree(work, ignore_errors=True)
    print(f"PASS: {ran} recipes ran as written")
    return 0


if __name__ == "__main__":
    sys.exit(main())
