#!/usr/bin/python3
"""test_disk_tier.py — a feature table served from disk (docs/serving.md
"Datasets larger than memory"; issue 51) by a live `featstore serve
--mem-budget`, the scaled case of a dataset larger than memory: a 4 MiB
table under a 4 MiB budget, so the table stays on disk behind a row cache
while the topology is copied.

Over grpc://, every row gathered, alone or in sampled batches, is the
file's (numpy reads it); the cache is hit on a second pass (/metrics). A
second start reads the row checksums back instead of building them. A
budget below what must stay in memory is refused naming both sizes. A row
rewritten on disk fails the requests that read it, naming the row, and
counts a checksum failure; a table truncated under 4 clients gathering
(2 unix://, 2 grpc://) fails only the requests past its end: the server keeps serving, every row
it returns is right, and no process is killed. unix:// trainers read
the table themselves through the server's cache, shared by every trainer
process, and their typed (hetero, link: PyG's loaders') calls read it the
same way; a GPU trainer (simulated GPUs) gets the disk table's rows in host
memory and a placed table's (its int8 copy) decoded on its GPU.

    /usr/bin/python3 tests/python/test_disk_tier.py --featstore BUILD/cli/featstore --lib BUILD/client-lib/libfeatstore.so
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))  # tests/lib: fs_serve
import fs_serve  # noqa: E402

ARGS = None
BUDGET = "4M"
np = featstore = None


def gen(dst):
    subprocess.run([ARGS.featstore, "gen", "rmat", "--scale", "13", "--dim", "128", "--symmetrize", "--out", dst,
                    "--force"], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def metric(ready, name):
    text = urllib.request.urlopen(f"http://127.0.0.1:{ready['metrics']}/metrics", timeout=10).read().decode()
    m = re.search(rf"^{name} ([0-9.e+]+)$", text, re.M)
    if not m:
        raise AssertionError(f"/metrics has no {name}")
    return float(m.group(1))


class DiskTier(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="fs-disk-tier-")
        self.data = os.path.join(self.tmp, "g")
        gen(self.data)
        self.table = np.load(os.path.join(self.data, "table_feat.npy"))
        self.procs = []

    def tearDown(self):
        for p in self.procs:
            if p.poll() is None:
                fs_serve.stop(p)
        shutil.rmtree(self.tmp, ignore_errors=True)

    def serve(self, budget=BUDGET, extra=()):
        log = open(os.path.join(self.tmp, f"serve{len(self.procs)}.log"), "w+")
        proc, ready = fs_serve.start(ARGS.featstore, self.data, os.path.join(self.tmp, f"s{len(self.procs)}"),
                                     extra=["--mem-budget", budget] + list(extra), stderr=log)
        self.procs.append(proc)
        deadline = time.monotonic() + 30  # the hot set is read after READY: wait for it, so what hits is settled
        while True:
            log.seek(0)
            text = log.read()
            if "kept in its cache for good" in text or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        log.close()  # the server keeps its own descriptor
        self.assertIn("kept in its cache for good", text)
        return proc, ready, text

    def coldest(self, n):
        """n rows of the lowest degree: outside the hot set the server pins."""
        indptr = np.load(os.path.join(self.data, "indptr.npy"))
        return np.sort(np.argsort(np.diff(indptr), kind="stable")[:n])

    def test_rows_from_disk_are_the_files_and_the_cache_is_hit(self):
        _, ready, log = self.serve()
        self.assertIn("table 'feat' (4.00 MiB) is served from disk", log)
        self.assertIn("row checksums built and the file verified", log)
        self.assertIn("dataset copied into sealed memory", log)  # auto: no file copy to write back at each start
        rng = np.random.default_rng(3)
        with featstore.connect(f"grpc://{ready['grpc']}") as c:
            ids = rng.choice(self.coldest(600), 3000)  # rows SIEVE's share of the cache holds
            hits, misses = [], []
            for _ in range(2):
                b = c.gather(ids, "feat")
                np.testing.assert_array_equal(b.features, self.table[ids])
                b.release()
                hits.append(metric(ready, "featstore_disk_cache_hits_total"))
                misses.append(metric(ready, "featstore_disk_cache_misses_total"))
            self.assertEqual(misses[1], misses[0], "the second pass read the disk")
            self.assertGreaterEqual(hits[1] - hits[0], len(np.unique(ids)))  # (a call's chunks count apart)
            hot = np.argsort(-np.diff(np.load(os.path.join(self.data, "indptr.npy"))), kind="stable")[:100]
            b = c.gather(hot, "feat")  # the hot set: in the cache since the start
            np.testing.assert_array_equal(b.features, self.table[hot])
            b.release()
            self.assertGreaterEqual(metric(ready, "featstore_disk_cache_hits_total") - hits[1], 100)
            self.assertEqual(metric(ready, "featstore_disk_cache_misses_total"), misses[1], "the hot set missed")
            seeds = rng.integers(0, self.table.shape[0], 256)
            b = c.sample_gather(seeds, [15, 10, 5], "feat")
            np.testing.assert_array_equal(b.features, self.table[b.nodes])
            b.release()
        self.assertEqual(metric(ready, "featstore_disk_tables"), 1)
        self.assertGreater(metric(ready, "featstore_disk_cache_misses_total"), 0)
        self.assertGreater(metric(ready, "featstore_disk_read_bytes_total"), 0)
        self.assertEqual(metric(ready, "featstore_disk_checksum_failures_total"), 0)

    def test_a_second_start_reads_the_checksums_back(self):
        proc, _, _ = self.serve()
        fs_serve.stop(proc)
        _, ready, log = self.serve(extra=["--prefault"])  # which touches what is copied, not the table
        self.assertRegex(log, r"row checksums read from .*table_feat\.npy\.rowsums")
        self.assertIn("4.00 MiB of feature tables left on disk", log)
        with featstore.connect(f"grpc://{ready['grpc']}") as c:
            b = c.gather(np.arange(0, self.table.shape[0], 50), "feat")
            np.testing.assert_array_equal(b.features, self.table[::50])
            b.release()

    def test_a_budget_below_the_topology_is_refused_naming_both_sizes(self):
        r = subprocess.run([ARGS.featstore, "serve", self.data, "--socket", os.path.join(self.tmp, "s"),
                            "--listen", "127.0.0.1:0", "--metrics", "127.0.0.1:0", "--mem-budget", "1M"],
                           capture_output=True, text=True, timeout=60)
        self.assertNotEqual(r.returncode, 0)
        self.assertRegex(r.stderr, r"memory budget \(--mem-budget\) of 1\.0 MiB is below what must stay in memory: "
                                   r"this file needs [0-9.]+ MiB more")
        r = subprocess.run([ARGS.featstore, "serve", self.data, "--mem-budget", "lots"], capture_output=True,
                           text=True, timeout=60)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("--mem-budget 'lots': want a size in bytes", r.stderr)

    def test_unix_trainers_read_the_table_through_the_shared_cache(self):
        _, ready, _ = self.serve()
        rng = np.random.default_rng(5)
        ids = rng.choice(self.coldest(500), 2000)  # outside the hot set, within SIEVE's share
        with featstore.connect(f"unix://{ready['unix']}") as c:
            b = c.gather(ids, "feat")
            np.testing.assert_array_equal(b.features, self.table[ids])
            b.release()
            b = c.sample_gather(rng.integers(0, self.table.shape[0], 128), [10, 5], "feat")
            np.testing.assert_array_equal(b.features, self.table[b.nodes])
            b.release()
            h = c.hetero_sample({"node": ids[:256]}, {("node", "to", "node"): [10, 5]}, node_tables=["feat"], seed=3)
            np.testing.assert_array_equal(h.x["node"]["feat"], self.table[h.nodes["node"]])  # PyG's loaders' call
            h.release()
        # A second trainer process finds the rows the first one read in the cache they share.
        code = (f"import sys, numpy as np; sys.path.insert(0, {os.path.join(fs_serve.TESTS_DIR, '..', 'client-lib', 'python')!r}); "
                f"import featstore as fs; c = fs.connect('unix://{ready['unix']}'); "
                f"ids = np.load({os.path.join(self.tmp, 'ids.npy')!r}); b = c.gather(ids, 'feat'); "
                f"np.save({os.path.join(self.tmp, 'got.npy')!r}, b.features)")
        np.save(os.path.join(self.tmp, "ids.npy"), ids)
        hits = metric(ready, "featstore_disk_cache_hits_total")
        subprocess.run([sys.executable, "-c", code], check=True, timeout=120, env=dict(os.environ))
        np.testing.assert_array_equal(np.load(os.path.join(self.tmp, "got.npy")), self.table[ids])
        self.assertGreaterEqual(metric(ready, "featstore_disk_cache_hits_total") - hits, len(np.unique(ids)),
                                "the second trainer did not find the first one's rows in the cache")

    def test_gpu_trainers_read_disk_tables_on_the_cpu_and_placed_tables_on_their_gpu(self):
        """A gpu:N trainer (simulated GPUs, in a child process: the variable
        is read once per process) of a server whose 'feat' stays on disk and
        whose int8 copy is placed on the GPUs: the disk rows come to host
        memory, read through the cache; the placed ones to the device,
        decoded there (the simulated GPU runs the CPU twin)."""
        subprocess.run([ARGS.featstore, "compress", self.data, "--table", "feat", "--to", "int8"], check=True,
                       stderr=subprocess.DEVNULL)
        env = dict(os.environ, FEATSTORE_SIM_GPUS="4", PYTHONPATH=os.pathsep.join(sys.path))
        log = open(os.path.join(self.tmp, "gpu-serve.log"), "w+")
        proc, ready = fs_serve.start(ARGS.featstore, self.data, os.path.join(self.tmp, "g.sock"),
                                     extra=["--mem-budget", BUDGET, "--topology", "nvlink-pairs", "--table",
                                            "feat_int8", "--gpu-budget", "0.5"], stderr=log, env=env)
        self.procs.append(proc)
        log.seek(0)
        self.assertIn("table 'feat' (4.00 MiB) is served from disk", log.read())
        m = json.load(open(os.path.join(self.data, "manifest.json")))
        raw = np.load(os.path.join(self.data, m["features"]["feat_int8"]["file"]))
        np.save(os.path.join(self.tmp, "want8.npy"), featstore.dequantize(raw))
        script = f"""
import ctypes, sys
import numpy as np
import featstore
seeds, want8 = np.arange(0, 4000, 9, dtype=np.int64), np.load({os.path.join(self.tmp, "want8.npy")!r})
table = np.load({os.path.join(self.data, "table_feat.npy")!r})
with featstore.connect(sys.argv[1], device="gpu:1") as g:
    with g.sample_gather(seeds, [10, 5], "feat", seed=3) as b:
        assert b.features_device is None, "rows read from disk are host memory"
        np.testing.assert_array_equal(b.features, table[b.nodes])
    with g.sample_gather(seeds, [10, 5], "feat_int8", seed=3) as b:
        assert isinstance(b.features, featstore.DeviceArray) and b.features_device == 1, b.features
        cai = b.features.__cuda_array_interface__
        n = int(np.prod(cai["shape"]))  # simulated device memory is host memory: read it in place
        rows = np.ctypeslib.as_array((ctypes.c_float * n).from_address(cai["data"][0])).reshape(cai["shape"])
        np.testing.assert_array_equal(rows, want8[b.nodes])
print("OK")
"""
        out = subprocess.run([sys.executable, "-c", script, f"unix://{ready['unix']}"], env=env, capture_output=True,
                             text=True, timeout=120)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("OK", out.stdout)

    def test_a_row_changed_on_disk_fails_its_requests_and_nothing_else(self):
        _, ready, _ = self.serve()
        path = os.path.join(self.data, "table_feat.npy")
        offset = os.path.getsize(path) - self.table.nbytes
        with open(path, "r+b") as f:
            bad = int(self.coldest(1)[0])  # not in the hot set, so not cached before the change
            f.seek(offset + bad * self.table.shape[1] * 4)
            f.write(b"\x7f" * 16)
        with featstore.connect(f"grpc://{ready['grpc']}") as c:
            with self.assertRaises(featstore.Error) as e:
                c.gather(np.array([5, bad, 9]), "feat")
            self.assertIn(f"row {bad} read from disk does not match its checksum", str(e.exception))
            good = np.array([i for i in (5, 9, 4000) if i != bad])
            b = c.gather(good, "feat")
            np.testing.assert_array_equal(b.features, self.table[good])
            b.release()
        self.assertGreaterEqual(metric(ready, "featstore_disk_checksum_failures_total"), 1)

    def test_a_table_truncated_under_four_clients_fails_only_past_its_end(self):
        proc, ready, _ = self.serve()
        path = os.path.join(self.data, "table_feat.npy")
        offset = os.path.getsize(path) - self.table.nbytes
        half = self.table.shape[0] // 2
        stop, failures, wrong = threading.Event(), [], []

        def client(seed):  # two trainers reading the file themselves, two over grpc://
            rng = np.random.default_rng(seed)
            uri = f"unix://{ready['unix']}" if seed % 2 == 0 else f"grpc://{ready['grpc']}"
            with featstore.connect(uri) as c:
                for _ in range(400):
                    if stop.is_set():
                        break
                    ids = rng.integers(0, self.table.shape[0], 64)
                    try:
                        b = c.gather(ids, "feat")
                    except featstore.Error as e:
                        failures.append(str(e))
                        continue
                    if not np.array_equal(b.features, self.table[ids]):
                        wrong.append(seed)
                    b.release()

        threads = [threading.Thread(target=client, args=(s,)) for s in range(4)]
        for t in threads:
            t.start()
        os.truncate(path, offset + half * self.table.shape[1] * 4)
        for t in threads:
            t.join(timeout=120)
        stop.set()
        self.assertFalse(wrong, "rows served wrong")
        self.assertIsNone(proc.poll(), "the server died")
        self.assertTrue(failures, "no request reached past the new end")
        self.assertTrue(all(f.startswith("I/O error: ") and "truncated?" in f or "does not match its checksum" in f
                            for f in failures), failures[:3])
        with featstore.connect(f"grpc://{ready['grpc']}") as c:
            ids = np.arange(0, half, 97)
            b = c.gather(ids, "feat")
            np.testing.assert_array_equal(b.features, self.table[ids])
            b.release()


def main():
    global ARGS, np, featstore
    ARGS, rest = fs_serve.client_test_args(__doc__)
    import numpy
    np = numpy
    import featstore as fs
    featstore = fs
    fs_serve.run_tests("disk_tier", rest)


if __name__ == "__main__":
    main()
else:  # collected by pytest (tests/conftest.py): the build the environment names
    ARGS = fs_serve.pytest_args(("numpy",))
    import numpy as np
    import featstore
