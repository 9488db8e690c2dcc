#!/usr/bin/python3
"""test_hot_cache.py — a grpc:// trainer's cache of the server's hot rows
(client-lib/client_grpc_hot.c; SplitRequest.hot and the requests' cached
rows in proto/featstore.proto), against a live `featstore serve` of a
power-law R-MAT graph.

The hot list is checked against an independent oracle: numpy's in-degree
of every node from the dataset's files, hottest first, ties by id, a
quarter of the nodes. With the cache (the default budget), grpc:// batches
are unix://'s bit for bit, and the server reads exactly the rows the cache
lacks (its feature-read counter in /metrics): one row (the row size), the
list's rows once, then each batch's nodes outside the list; with
FEATSTORE_CACHE_MB=0, every node's. A budget smaller than the list holds
the list's first rows only, the id map counted in it. Typed batches
(HeteroSample, what PyG's loaders call) leave the cached rows of their
first node table out of the image, and are unix://'s bit for bit too. A
server restarted behind the same address with another dataset never
answers from the old cache: the first call after the restart gets every
row (the server names another instance), the next fills the cache anew. A
bad FEATSTORE_CACHE_MB is an error naming it.

    /usr/bin/python3 tests/python/test_hot_cache.py --featstore BUILD/cli/featstore --lib BUILD/client-lib/libfeatstore.so
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

LIB_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib")  # tests/lib: fs_serve
sys.path.insert(0, LIB_DIR)
import fs_serve  # noqa: E402

ARGS = None
np = featstore = None
FANOUTS = [10, 5]
BATCH = 256


# The restart test's launcher: `start DATASET PORT` serves DATASET on PORT
# and answers start()'s ready dict; `stop` stops it and answers its status.
LAUNCHER = r"""
import json, os, sys
featstore, tmp = sys.argv[1], sys.argv[2]
sys.path.insert(0, sys.argv[3])  # tests/lib
import fs_serve
proc = None
for n, line in enumerate(sys.stdin):
    word = line.split()
    if word[0] == "start":
        proc, ready = fs_serve.start(featstore, word[1], os.path.join(tmp, f"l{n}.sock"), listen=f"127.0.0.1:{word[2]}")
        print(json.dumps(ready), flush=True)
    else:
        print(json.dumps({"status": fs_serve.stop(proc)}), flush=True)
"""


def gen(out, seed, dim=24):
    subprocess.run([ARGS.featstore, "gen", "rmat", "--scale", "12", "--dim", str(dim), "--symmetrize", "--seed",
                    str(seed), "--out", out, "--force"], check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, timeout=300)
    return out


def oracle_hot(dataset):
    """The hot list by its definition: in-degree (appearances in the CSR's
    indices), hottest first, ties by ascending id, (N + 3) // 4 nodes."""
    indptr = np.load(os.path.join(dataset, "indptr.npy"))
    n = len(indptr) - 1
    deg = np.bincount(np.load(os.path.join(dataset, "indices.npy")), minlength=n)
    order = np.lexsort((np.arange(n), -deg))
    return order[:(n + 3) // 4]


def rows_read(ready):
    """The server's feature rows read so far, every reader and tier."""
    text = fs_serve.metrics(ready)
    return sum(float(v) for v in re.findall(r"^featstore_feature_rows_read_total\{[^}]*\} (\S+)$", text, re.M))


def epoch(client, epoch_no):
    """One node stream epoch of the split "train": [(nodes, features)] per batch."""
    out = []
    with client.node_stream("train", batch_size=BATCH, num_neighbors=FANOUTS, table="feat", labels="",
                            seed=3, epoch=epoch_no) as s:
        for sb in s:
            out.append((np.array(sb.batch.nodes), np.array(sb.batch.features)))
            sb.release()
    return out


def hetero_epoch(client, epoch_no, tables=("feat", "labels")):
    """One hetero stream epoch (PyG's loaders' calls: HeteroSample over
    grpc://): [(nodes, {table: rows})] per batch."""
    out = []
    with client.hetero_stream("train", batch_size=BATCH, num_neighbors={("node", "to", "node"): FANOUTS},
                              seed_type="node", node_tables=tables, seed=3, epoch=epoch_no) as s:
        for sb in s:
            h = sb.hetero
            out.append((np.array(h.nodes["node"]), {t: np.array(h.x["node"][t]) for t in tables}))
            sb.release()
    return out


class HotCache(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="fs-hot-")
        cls.data = [gen(os.path.join(cls.tmp, "g1"), 1), gen(os.path.join(cls.tmp, "g2"), 2)]

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def setUp(self):
        os.environ.pop("FEATSTORE_CACHE_MB", None)
        self.procs = []

    def tearDown(self):
        os.environ.pop("FEATSTORE_CACHE_MB", None)
        for p in self.procs:
            self.assertEqual(fs_serve.stop(p), 0)

    def serve(self, dataset, listen="127.0.0.1:0"):
        sock = os.path.join(self.tmp, f"s{len(self.procs)}.sock")
        proc, ready = fs_serve.start(ARGS.featstore, dataset, sock, listen=listen)
        self.procs.append(proc)
        return proc, ready

    def assert_same(self, got, want, what):
        got = [(n, x["feat"] if isinstance(x, dict) else x) for n, x in got]
        self.assertEqual(len(got), len(want), what)
        for i, ((gn, gf), (wn, wf)) in enumerate(zip(got, want)):
            np.testing.assert_array_equal(gn, wn, f"{what}: batch {i}'s nodes")
            np.testing.assert_array_equal(gf, wf, f"{what}: batch {i}'s rows")

    def test_the_server_sends_only_the_rows_the_cache_lacks(self):
        _, ready = self.serve(self.data[0])
        hot = oracle_hot(self.data[0])
        in_list = np.zeros(len(np.load(os.path.join(self.data[0], "indptr.npy"))) - 1, bool)
        in_list[hot] = True
        grpc = "grpc://" + ready["grpc"]
        with featstore.connect(grpc, timeout_ms=30000) as c:
            before = rows_read(ready)
            first = epoch(c, 0)  # fills the cache: the list's rows, then the misses
            filled = rows_read(ready)
            second = epoch(c, 1)
            after = rows_read(ready)
        misses = [int((~in_list[n]).sum()) for n, _ in first]
        self.assertGreater(sum(len(n) for n, _ in first), 2 * sum(misses), "a power-law graph: the list holds most")
        self.assertEqual(filled - before, 1 + len(hot) + sum(misses),
                         "a row (its size), the list's rows once, then each batch's misses")
        self.assertEqual(after - filled, sum(int((~in_list[n]).sum()) for n, _ in second))
        os.environ["FEATSTORE_CACHE_MB"] = "0"
        with featstore.connect(grpc, timeout_ms=30000) as c:
            uncached = epoch(c, 1)
            self.assertEqual(rows_read(ready) - after, sum(len(n) for n, _ in uncached), "no cache: every row")
        with featstore.connect("unix://" + ready["unix"], timeout_ms=30000) as c:
            self.assert_same(first, epoch(c, 0), "grpc:// with the cache against unix://, epoch 0")
            self.assert_same(second, epoch(c, 1), "grpc:// with the cache against unix://, epoch 1")
            self.assert_same(uncached, second, "FEATSTORE_CACHE_MB=0 against the cache")
        print(f"RESULT hot cache: {len(hot)} hot rows cached; the server read {sum(misses)} of "
              f"{sum(len(n) for n, _ in first)} rows in an epoch, bit for bit unix://'s batches")

    def test_typed_batches_leave_the_cached_rows_out_of_the_image(self):
        _, ready = self.serve(self.data[0])
        in_list = np.zeros(len(np.load(os.path.join(self.data[0], "indptr.npy"))) - 1, bool)
        in_list[oracle_hot(self.data[0])] = True
        with featstore.connect("grpc://" + ready["grpc"], timeout_ms=30000) as c:
            hetero_epoch(c, 0)  # fills the cache
            before = rows_read(ready)
            got = hetero_epoch(c, 1)
            read = rows_read(ready) - before
        nodes = sum(len(n) for n, _ in got)
        misses = sum(int((~in_list[n]).sum()) for n, _ in got)
        self.assertEqual(read, misses + nodes, "feat: the uncached rows; labels (not cached): every node's")
        with featstore.connect("unix://" + ready["unix"], timeout_ms=30000) as c:
            want = hetero_epoch(c, 1)
        self.assertEqual(len(got), len(want))
        for i, ((gn, gx), (wn, wx)) in enumerate(zip(got, want)):
            np.testing.assert_array_equal(gn, wn, f"batch {i}'s nodes")
            for t in gx:
                np.testing.assert_array_equal(gx[t], wx[t], f"batch {i}'s {t}")
        print(f"RESULT hot cache, typed batches: the server read {misses} of {nodes} feature rows in an epoch")

    def test_a_restarted_server_is_never_served_from_the_old_cache(self):
        # The servers are started by a launcher process: a fork of this one would
        # close its grpc:// connections (the binding lets go of them before a
        # fork), and with them the cache this test needs alive across the restart.
        launcher = subprocess.Popen([sys.executable, "-c", LAUNCHER, ARGS.featstore, self.tmp, LIB_DIR],
                                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        try:
            self.restart_under(launcher)
        finally:
            launcher.stdin.close()
            launcher.wait(timeout=60)

    def restart_under(self, launcher):
        def command(line):
            launcher.stdin.write(line + "\n")
            launcher.stdin.flush()
            return json.loads(launcher.stdout.readline())
        port = fs_serve.free_port()
        ready = command(f"start {self.data[0]} {port}")
        uri, seeds = f"grpc://127.0.0.1:{port}", np.arange(0, 4096, 16, dtype=np.int64)
        with featstore.connect(uri, timeout_ms=30000) as c, featstore.connect(uri, timeout_ms=30000) as keeper:
            self.assert_same(epoch(c, 0), epoch_of(ready, 0), "the first server")
            self.assert_same(sample(c, seeds), sample_of(ready, seeds), "the first server, typed")
            sample(keeper, seeds)  # its connection holds the process's cache of that address from now on
            self.assertEqual(command("stop")["status"], 0)
            ready = command(f"start {self.data[1]} {port}")  # another graph, the same address
            # c's calls reconnect, and find the first server's rows still cached (the
            # keeper's): the request names that server's instance, which this one is not
            before = rows_read(ready)
            got = sample(c, seeds, retry=True)
            self.assertEqual(rows_read(ready) - before, len(got[0][0]), "every row: another instance's cache")
            self.assert_same(got, sample_of(ready, seeds), "after the restart, typed")
            self.assert_same(sample(c, seeds), sample_of(ready, seeds), "the cache filled anew, typed")
            before = rows_read(ready)
            got = sample(c, seeds)
            self.assertLess(rows_read(ready) - before, len(got[0][0]), "the new server's rows cached")
            self.assert_same(got, sample_of(ready, seeds), "the new server's rows cached, typed")
            self.assert_same(epoch(c, 1), epoch_of(ready, 1), "after the restart, streams")
        self.assertEqual(command("stop")["status"], 0)

    def test_the_budget_bounds_the_cache(self):
        # 2 KiB rows: the trainer asks for as many ids as 1 MiB of rows would
        # hold, then keeps the id map (4 bytes a node up to the largest id
        # listed) and the first of their rows that fit after it
        data = gen(os.path.join(self.tmp, "wide"), 1, dim=512)
        _, ready = self.serve(data)
        hot = oracle_hot(data)
        os.environ["FEATSTORE_CACHE_MB"] = "1"
        listed = hot[:(1 << 20) // 2048]
        fits = min(len(listed), ((1 << 20) - 4 * (int(listed.max()) + 1)) // 2048)
        self.assertLess(fits, len(hot))
        in_cache = np.zeros(len(np.load(os.path.join(data, "indptr.npy"))) - 1, bool)
        in_cache[hot[:fits]] = True
        with featstore.connect("grpc://" + ready["grpc"], timeout_ms=30000) as c:
            before = rows_read(ready)
            got = epoch(c, 0)
            read = rows_read(ready) - before
        self.assertEqual(read, 1 + fits + sum(int((~in_cache[n]).sum()) for n, _ in got),
                         f"the first {fits} of the {len(hot)} listed rows cached")
        self.assert_same(got, epoch_of(ready, 0), "a partial cache against unix://")

    def test_a_bad_budget_is_named(self):
        _, ready = self.serve(self.data[0])
        os.environ["FEATSTORE_CACHE_MB"] = "lots"
        with featstore.connect("grpc://" + ready["grpc"], timeout_ms=30000) as c:
            with self.assertRaisesRegex(featstore.Error, "FEATSTORE_CACHE_MB='lots'") as e:
                epoch(c, 0)
            self.assertEqual(e.exception.status, featstore.Status.INVALID_ARGUMENT)


def sample(client, seeds, retry=False):
    """One hetero_sample on the client's own connection: [(nodes, feat rows)];
    with retry, again while the server is not reachable yet (bounded)."""
    for attempt in range(100 if retry else 1):
        try:
            with client.hetero_sample({"node": seeds}, {("node", "to", "node"): FANOUTS}, seed=7,
                                      node_tables=("feat",)) as h:
                return [(np.array(h.nodes["node"]), np.array(h.x["node"]["feat"]))]
        except featstore.Error as e:
            if e.status != featstore.Status.UNAVAILABLE or attempt == 99 or not retry:
                raise
            time.sleep(0.1)


def sample_of(ready, seeds):
    with featstore.connect("unix://" + ready["unix"], timeout_ms=30000) as c:
        return sample(c, seeds)


def hetero_epoch_of(ready, epoch_no):
    with featstore.connect("unix://" + ready["unix"], timeout_ms=30000) as c:
        return [(n, x["feat"]) for n, x in hetero_epoch(c, epoch_no)]


def epoch_of(ready, epoch_no):
    with featstore.connect("unix://" + ready["unix"], timeout_ms=30000) as c:
        return epoch(c, epoch_no)


def main():
    global ARGS, np, featstore
    ARGS, rest = fs_serve.client_test_args(__doc__)
    import numpy
    np = numpy
    import featstore as fs
    featstore = fs
    fs_serve.run_tests("hot_cache", rest)


if __name__ == "__main__":
    main()
else:  # collected by pytest (tests/conftest.py): the build the environment names
    ARGS = fs_serve.pytest_args(("numpy",))
    import numpy as np
    import featstore
