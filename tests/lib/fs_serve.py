"""fs_serve.py — run `featstore serve` from a Python test, shared by every
Python test under tests/ (test_python.py, test_no_grpc_loaded.py, ...).

    proc, ready = start(featstore, dataset, sock)      # ready = {"unix": path, "grpc": host:port, "metrics": ...}
    ...
    status = stop(proc)                                 # SIGTERM, then the exit status

pytest_args() is what ctest's arguments are under pytest (tests/conftest.py).
import_cora() writes the homogeneous Cora dataset the GraphSAGE tests serve
(cora() is examples/cora.py, which writes the typed and link ones);
gen_typed_rmat() the typed R-MAT (papers, authors, venues; link splits) of
tests/integration/streams/test_stream_typed.c.

The server binds an ephemeral gRPC and metrics port and prints one line
``READY unix=… grpc=… metrics=…`` once it serves; start() reads it. The
child dies with the test process (PR_SET_PDEATHSIG), so a crashed test never
leaves a server behind.
"""
import argparse
import ctypes
import importlib.util
import os
import re
import select
import signal
import subprocess
import sys
import time
import urllib.request
import unittest

TESTS_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # tests/ (this file is tests/lib/'s)
CORA_NPZ = os.path.join(TESTS_DIR, "data", "cora.npz")
CORA_SCRIPT = os.path.join(os.path.dirname(TESTS_DIR), "examples", "cora.py")
SKIP = 77  # ctest's SKIP_RETURN_CODE for these tests


def client_test_args(description):
    """The start of a Python client test run by ctest: --featstore and --lib
    parsed (what is left is unittest's), skipped (exit 77, saying why)
    without numpy, and `import featstore` set to load --lib. (args, rest)."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--featstore", required=True)
    p.add_argument("--lib", required=True)
    args, rest = p.parse_known_args()
    if importlib.util.find_spec("numpy") is None:
        print(f"SKIP: {sys.executable} has no numpy (apt-get install python3-numpy)")
        sys.exit(SKIP)
    os.environ["FEATSTORE_LIB"] = args.lib
    sys.path.insert(0, os.path.join(os.path.dirname(TESTS_DIR), "client-lib", "python"))
    return args, rest


def pytest_args(modules=("numpy",), **extra):
    """For a test module pytest imports rather than ctest runs (tests/conftest.py):
    the arguments ctest passes it, from the environment conftest.py sets
    (featstore = $FEATSTORE_BIN, lib = $FEATSTORE_LIB) and the module's own
    (`extra`, at ctest's values). The module is skipped whole, saying why,
    without one of `modules` or without the build."""
    import pytest
    for mod in modules:
        pytest.importorskip(mod, reason=f"{sys.executable} has no {mod}")
    args = argparse.Namespace(featstore=os.environ.get("FEATSTORE_BIN", ""), lib=os.environ.get("FEATSTORE_LIB", ""),
                              **extra)
    missing = [p for p in (args.featstore, args.lib) if not os.path.isfile(p)]
    if missing:
        pytest.skip(f"no build: {', '.join(missing)} missing (build it, or set FEATSTORE_BUILD)",
                    allow_module_level=True)
    return args


def run_tests(name, rest):
    """unittest over `rest` (all when empty), its time as a RESULT line;
    exits 0 when every test passed, else 1."""
    t0 = time.perf_counter()
    prog = unittest.main(argv=[sys.argv[0]] + rest, exit=False, verbosity=2)
    print(f"RESULT {name} took {time.perf_counter() - t0:.1f} s")
    sys.exit(0 if prog.result.wasSuccessful() else 1)


class Skip(Exception):
    """A reason this machine cannot run the check (not a failure of it)."""


def verdict(name, body):
    """body(), then the end of a test ctest runs: `NAME: skipped: why` and
    exit 77 on Skip, `NAME: FAILED: what` and exit 1 on an AssertionError,
    RuntimeError or a command's timeout, else `NAME: ok` and what body returned, exit 0."""
    try:
        said = body()
    except Skip as e:
        print(f"{name}: skipped: {e}")
        sys.exit(SKIP)
    except (AssertionError, RuntimeError, subprocess.TimeoutExpired) as e:
        print(f"{name}: FAILED: {e}")
        sys.exit(1)
    print(f"{name}: ok" + (f" {said}" if said else ""))


def die_with_parent(sig=signal.SIGKILL):
    """preexec_fn for server children: the kernel sends them sig (kills them)
    if the test dies."""
    ctypes.CDLL(None, use_errno=True).prctl(1, sig)  # PR_SET_PDEATHSIG


def read_ready(proc, timeout=60):
    """The server's READY line as {"unix": …, "grpc": …, "metrics": …}."""
    deadline = time.monotonic() + timeout
    line = b""
    while not line.endswith(b"\n"):
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([proc.stdout], [], [], left)[0]:
            raise RuntimeError("featstore serve printed no READY line in time")
        chunk = os.read(proc.stdout.fileno(), 1)
        if not chunk:
            raise RuntimeError(f"featstore serve exited before READY (status {proc.wait()})")
        line += chunk
    fields = line.decode().split()
    if not fields or fields[0] != "READY":
        raise RuntimeError(f"bad READY line: {line!r}")
    return dict(f.split("=", 1) for f in fields[1:])


def spawn_ready(cmd, **popen):
    """cmd (a featstore server) started, and its READY line: (proc, ready).
    The process is killed if it never gets ready."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, preexec_fn=die_with_parent, **popen)
    try:
        return proc, read_ready(proc)
    except Exception:
        proc.kill()
        proc.wait()
        proc.stdout.close()
        raise


def start(featstore, dataset, sock, extra=(), listen="127.0.0.1:0", **popen):
    """`featstore serve dataset --socket sock` on ephemeral ports (or gRPC on
    listen), plus extra options: (proc, ready). The process is killed if it
    never gets ready."""
    cmd = [featstore, "serve", dataset, "--socket", sock, "--listen", listen, "--metrics", "127.0.0.1:0"]
    return spawn_ready(cmd + list(extra), **popen)


def require_pyg(root):
    """Re-executes this script in the PyG venv (scripts/pyg-venv.sh: root's
    .venv-pyg, or $FS_PYG_VENV) when this Python lacks torch_geometric;
    exits 77 (skipped) when neither has it."""
    if importlib.util.find_spec("torch_geometric") is not None:
        return
    venv = os.path.abspath(os.environ.get("FS_PYG_VENV", os.path.join(root, ".venv-pyg")))
    py = os.path.join(venv, "bin", "python")
    if os.path.exists(py) and os.path.abspath(sys.prefix) != venv:  # (its python is a link to this one)
        os.execv(py, [py] + sys.argv)
    print(f"SKIP: no torch_geometric in {sys.executable} nor a venv at {py} (run scripts/pyg-venv.sh)")
    sys.exit(SKIP)


def free_port():
    """A loopback port nothing listens on now."""
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def etcd_bin():
    """Debian's etcd, or None (a cluster test then exits 77)."""
    for path in ("/usr/bin/etcd", "/usr/local/bin/etcd"):
        if os.access(path, os.X_OK):
            return path
    return None


def start_etcd(tmp, timeout=20, attempts=3):
    """A private etcd on two free loopback ports with its data under tmp:
    (proc, "127.0.0.1:PORT") once it answers; stop it with stop(). Ports
    are picked free and then bound by etcd, so a parallel test may take
    one between: an etcd that exits (its port taken) is started again on
    new ports, and it counts as up only while it is still running after
    answering (the answer may have come from whoever took the port)."""
    import socket
    for attempt in range(attempts):
        client, peer = free_port(), free_port()
        cmd = [etcd_bin(), "--data-dir", os.path.join(tmp, "etcd%d" % attempt), "--listen-client-urls",
               f"http://127.0.0.1:{client}", "--advertise-client-urls", f"http://127.0.0.1:{client}",
               "--listen-peer-urls", f"http://127.0.0.1:{peer}", "--initial-advertise-peer-urls",
               f"http://127.0.0.1:{peer}", "--initial-cluster", f"default=http://127.0.0.1:{peer}"]
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, preexec_fn=die_with_parent)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                with socket.create_connection(("127.0.0.1", client), timeout=1):
                    time.sleep(0.3)  # the port opens a moment before it serves
                if proc.poll() is None:
                    return proc, f"127.0.0.1:{client}"
            except OSError:
                time.sleep(0.1)
        stop(proc)
    raise RuntimeError("etcd did not start in %d attempts" % attempts)


def start_shard(featstore, root, parts, endpoint=None, cluster=None, shard=None, metrics=False, socket=None,
                **popen):
    """`featstore serve root --parts parts` on an ephemeral port, in cluster
    etcd://endpoint/cluster as shard `shard` when given, with /metrics on an
    ephemeral port when `metrics`, and a unix socket for the trainers of its
    machine at `socket` when given: (proc, ready)."""
    cmd = [featstore, "serve", root, "--parts", parts, "--listen", "127.0.0.1:0"]
    if metrics:
        cmd += ["--metrics", "127.0.0.1:0"]
    if socket:
        cmd += ["--socket", socket]
    if cluster:
        cmd += ["--cluster", f"etcd://{endpoint}/{cluster}", "--shard", str(shard)]
    return spawn_ready(cmd, **popen)


def trainer_families(doc):
    """{family: type} of docs/metrics.md's section "Trainers of a cluster":
    what a cluster trainer's fs_stats starts with."""
    with open(doc) as f:
        text = f.read()
    start = text.index("\n## Trainers of a cluster")
    end = text.find("\n## ", start + 1)
    rows = re.findall(r"^\| `(featstore_\w+)` \| (\w+) \|", text[start:end if end > 0 else len(text)], re.M)
    return dict(rows)


def shard_scrape(featstore, dataset, tmp):
    """A shard server's /metrics: dataset in 2 parts under tmp, one shard
    holding both, scraped once. (text, the shard's exit status)."""
    parts = os.path.join(tmp, os.path.basename(dataset) + ".parts")
    subprocess.run([featstore, "partition", dataset, "--parts", "2", "--out", parts], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    proc, ready = start_shard(featstore, parts, "0,1", metrics=True, stderr=subprocess.DEVNULL)
    try:
        text = metrics(ready)
    finally:
        status = stop(proc)
    return text, status


def stop(proc, timeout=30):
    """SIGTERM, wait, and the exit status (killed after timeout: the status
    is then the kill's, which no caller takes for success)."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    proc.stdout.close()
    return proc.returncode


def wait_child(pid, seconds=120):
    """A forked child's exit status; killed after `seconds` (a hang guard, not a timing check): -9."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.02)
    os.kill(pid, 9)
    os.waitpid(pid, 0)
    return -9


def tcp_sockets(state):
    """(local port, remote port) of this machine's TCP sockets in `state`
    (/proc/net/tcp and tcp6's hex code: "0A" listening, "01" established)."""
    found = set()
    for name in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(name) as f:
                rows = f.read().splitlines()[1:]
        except FileNotFoundError:
            continue
        for row in rows:
            fields = row.split()
            if len(fields) > 3 and fields[3] == state:
                found.add((int(fields[1].rsplit(":", 1)[1], 16), int(fields[2].rsplit(":", 1)[1], 16)))
    return found


def metrics(ready):
    """The server's /metrics text (ready: start()'s; its metrics port)."""
    with urllib.request.urlopen(f"http://127.0.0.1:{int(ready['metrics'])}/metrics", timeout=10) as r:
        return r.read().decode()


def slot_ranges():
    """(start, end) of every result slot this process maps over unix://: the
    client library names each "[anon:featstore-slot-N]" in /proc/self/maps.
    Raises unittest.SkipTest where the kernel cannot name anonymous memory
    (PR_SET_VMA_ANON_NAME: Linux 5.17+, CONFIG_ANON_VMA_NAME)."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
    probe = libc.mmap(None, 4096, 3, 0x22, -1, 0)  # PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_ANONYMOUS
    named = libc.prctl(0x53564d41, 0, ctypes.c_ulong(probe), ctypes.c_ulong(4096), ctypes.c_char_p(b"probe")) == 0
    libc.munmap(ctypes.c_void_p(probe), ctypes.c_size_t(4096))
    if not named:
        raise unittest.SkipTest("this kernel cannot name anonymous mappings (PR_SET_VMA_ANON_NAME)")
    ranges = []
    with open("/proc/self/maps") as maps:
        for line in maps:
            parts = line.split(maxsplit=5)
            if len(parts) == 6 and parts[5].startswith("[anon:featstore-slot-"):
                start, end = (int(x, 16) for x in parts[0].split("-"))
                ranges.append((start, end))
    return ranges


def cora():
    """examples/cora.py as a module: its write_typed(out, ...) and
    write_link(out, ...) make the typed and link Cora datasets."""
    spec = importlib.util.spec_from_file_location("cora", CORA_SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def import_cora(featstore, out):
    """`featstore import npz tests/data/cora.npz --symmetrize` into out: 2708
    nodes, tables "feat" and "labels", and the importer's seeded 60/20/20
    train/valid/test split. Returns out."""
    subprocess.run([featstore, "import", "npz", CORA_NPZ, "--out", out, "--symmetrize"], check=True,
                   stdout=subprocess.DEVNULL)
    return out


def propagate(featstore, dataset, hops, rows="all"):
    """`featstore propagate dataset --hops hops --rows rows`: the tables
    hop_0..hop_hops (rows "labelled": row tables of the splits' nodes).
    Returns dataset."""
    subprocess.run([featstore, "propagate", dataset, "--hops", str(hops), "--rows", rows], check=True,
                   stdout=subprocess.DEVNULL)
    return dataset


def gen_typed_rmat(featstore, out, scale=11):
    """`featstore gen rmat --typed --scale SCALE --out out`: 2**scale papers
    (tables "feat" and "labels", splits "paper/train", ...), authors and
    venues, timed edge types (("paper", "cites", "paper") with an edge
    table "feat"), and the link splits "train", "valid", "test" of cites
    with times. Returns out."""
    done = subprocess.run([featstore, "gen", "rmat", "--typed", "--scale", str(scale), "--out", out],
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"featstore gen rmat --typed exited {done.returncode}:\n{done.stdout}{done.stderr}")
    return out
