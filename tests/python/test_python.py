#!/usr/bin/python3
"""test_python.py — the Python client (client-lib/python/featstore) against a
real `featstore serve`, and a GraphSAGE trained through it.

The module fixture imports tests/data/cora.npz (symmetrised; the importer
writes labels and a seeded 60/20/20 split) and starts the server as a child
process on a Unix socket in a scratch directory, an ephemeral gRPC port and
an ephemeral metrics port, reading the bound addresses from its
``READY unix=… grpc=… metrics=…`` line. The tests then check what the
binding promises: the dataset's facts, splits and labels (against numpy
reads of the dataset's files), zero-copy arrays (their memory lies in the
batch's shared memfd slot over unix://), the lifetime rule, C errors mapped
to featstore.Error and Python-side argument checks, the same answers over
unix:// and grpc://, and examples/train_graphsage.py reaching >= 0.82 test
accuracy on Cora, the same over both transports. The server must stop with
exit 0 on SIGTERM.

    /usr/bin/python3 tests/python/test_python.py --featstore BUILD/cli/featstore --lib BUILD/client-lib/libfeatstore.so

Registered with ctest (tests/python/CMakeLists.txt); exits 77 (ctest's skip) when
numpy or torch is missing. Prints RESULT lines with the measured figures.
"""
import argparse
import gc
import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))  # tests/lib: fs_serve
import fs_serve  # noqa: E402

SKIP = 77
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))  # the repository (this is tests/python/)
ARGS = None  # parsed in main()
SERVER = {}  # the module fixture: proc, dir, dataset, sock, unix, grpc
np = featstore = None  # imported by main(), once the skip check passed


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--featstore", required=True, help="the featstore CLI")
    p.add_argument("--lib", required=True, help="libfeatstore.so")
    p.add_argument("--epochs", type=int, default=10)
    p.add_argument("--seeds", type=int, default=3)
    args, rest = p.parse_known_args()
    return args, rest


def require_modules():
    """numpy and torch are optional on a build machine: their absence is a skip."""
    for mod in ("numpy", "torch"):
        if importlib.util.find_spec(mod) is None:
            print(f"SKIP: {sys.executable} has no {mod} (apt-get install python3-{mod})")
            sys.exit(SKIP)


# ---- the server fixture ----------------------------------------------------------

def setUpModule():
    tmp = tempfile.mkdtemp(prefix="featstore-py-")
    SERVER["dir"] = tmp
    dataset = fs_serve.import_cora(ARGS.featstore, os.path.join(tmp, "cora"))
    SERVER.update(start_server(dataset, os.path.join(tmp, "s.sock")))


def start_server(dataset, sock):
    """`featstore serve dataset` on sock and ephemeral ports: the fixture's keys."""
    proc, ready = fs_serve.start(ARGS.featstore, dataset, sock)
    return dict(proc=proc, dataset=dataset, sock=sock, unix="unix://" + ready["unix"], grpc="grpc://" + ready["grpc"])


def tearDownModule():
    proc = SERVER.get("proc")
    try:
        if proc and proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            status = proc.wait(timeout=30)
            if status != 0:
                raise AssertionError(f"featstore serve exited {status} on SIGTERM, expected 0")
            if os.path.exists(SERVER["sock"]):
                raise AssertionError("featstore serve left its socket behind")
            print("RESULT server stopped on SIGTERM: exit 0, socket removed")
    finally:
        if proc and proc.poll() is None:
            proc.kill()
        if proc:
            proc.stdout.close()
        shutil.rmtree(SERVER.get("dir", ""), ignore_errors=True)


def dataset_array(name):
    return np.load(os.path.join(SERVER["dataset"], name))


def inside(addr, nbytes, start, length):
    return start <= addr and addr + nbytes <= start + length


# ---- the binding ------------------------------------------------------------------

class BindingTest(unittest.TestCase):
    def setUp(self):
        self.unix = featstore.connect(SERVER["unix"])
        self.grpc = featstore.connect(SERVER["grpc"], timeout_ms=30000)

    def tearDown(self):
        self.unix.close()
        self.grpc.close()

    def test_info_splits_and_labels_match_the_dataset(self):
        labels = dataset_array("labels.npy")
        for c in (self.unix, self.grpc):
            info = c.info()
            self.assertEqual((info.dataset, info.num_nodes, info.num_classes), ("cora", 2708, 7))
            self.assertTrue(info.symmetric)
            self.assertEqual(info.tables["feat"], featstore.TableInfo("feat", "float32", 2708, 1433))
            self.assertEqual(info.tables["labels"], featstore.TableInfo("labels", "int64", 2708, 1))
            self.assertEqual(set(info.splits), {"train", "valid", "test"})
            parts = {s: c.split(s) for s in info.splits}
            for name, ids in parts.items():
                np.testing.assert_array_equal(ids, dataset_array(f"split_{name}.npy"))
            sizes = [len(parts[s]) for s in ("train", "valid", "test")]
            self.assertEqual(sum(sizes), int((labels >= 0).sum()))
            self.assertAlmostEqual(sizes[0] / sum(sizes), 0.6, delta=0.01)
            self.assertEqual(len(np.unique(np.concatenate(list(parts.values())))), sum(sizes), "splits overlap")
            with c.gather(parts["test"], "labels") as b:
                self.assertEqual((b.dtype, b.features.shape), ("int64", (len(parts["test"]), 1)))
                np.testing.assert_array_equal(b.features[:, 0], labels[parts["test"]])

    def test_sample_gather_rows_are_the_sampled_nodes_rows(self):
        table = dataset_array("table_feat.npy")
        indptr, indices = dataset_array("indptr.npy"), dataset_array("indices.npy")
        seeds = np.array([5, 17, 5, 2000, 99])  # a repeated seed, and a plain int array
        with self.unix.sample_gather(seeds, [25, 10], "feat", seed=7, edge_ids=True) as b:
            self.assertEqual((b.num_hops, b.features.shape), (2, (b.num_nodes, 1433)))
            np.testing.assert_array_equal(b.features, table[b.nodes])
            np.testing.assert_array_equal(b.nodes[b.seed_local], seeds)
            self.assertEqual(b.blocks[0].num_dst, 4)
            self.assertEqual(b.blocks[1].num_dst, b.blocks[0].num_src)
            self.assertEqual(b.blocks[-1].num_src, b.num_nodes)
            for blk in b.blocks:
                u, v = b.nodes[blk.edge_dst], b.nodes[blk.edge_src]
                self.assertTrue(np.all((indptr[u] <= blk.edge_ids) & (blk.edge_ids < indptr[u + 1])))
                np.testing.assert_array_equal(indices[blk.edge_ids], v)
                np.testing.assert_array_equal(np.repeat(np.arange(blk.num_dst), np.diff(blk.dst_offsets)),
                                              blk.edge_dst)

    def test_unix_and_grpc_give_identical_batches(self):
        seeds = self.unix.split("train")[:300]
        with self.unix.sample_gather(seeds, [25, 10], "feat", seed=11) as a, \
                self.grpc.sample_gather(seeds, [25, 10], "feat", seed=11) as b:
            for x, y in [(a.nodes, b.nodes), (a.seed_local, b.seed_local), (a.features, b.features)]:
                np.testing.assert_array_equal(x, y)
            for x, y in zip(a.blocks, b.blocks):
                for f in ("dst_offsets", "edge_dst", "edge_src"):
                    np.testing.assert_array_equal(getattr(x, f), getattr(y, f))
        with self.unix.sample(seeds, [5, 5, 5], mode=["uniform", "uniform_replace", "uniform"], seed=3) as a, \
                self.grpc.sample(seeds, [5, 5, 5], mode=["uniform", "uniform_replace", "uniform"], seed=3) as b:
            self.assertIsNone(a.features)
            np.testing.assert_array_equal(a.nodes, b.nodes)

    def test_unix_arrays_are_zero_copy_views_of_the_result_slot(self):
        with self.unix.sample_gather(self.unix.split("train")[:256], [25, 10], "feat", seed=1) as b:
            x = b.features
            self.assertFalse(x.flags.owndata, "features own their data: they were copied")
            self.assertFalse(x.flags.writeable, "results must be read-only views")
            base, length = b.region()
            slots = fs_serve.slot_ranges()
            self.assertTrue(any(inside(base, length, s, e - s) for s, e in slots),
                            f"the batch's region {base:#x}+{length} is not a result slot")
            arrays = [x, b.nodes, b.seed_local] + [a for blk in b.blocks
                                                   for a in (blk.dst_offsets, blk.edge_dst, blk.edge_src)]
            for a in arrays:
                self.assertTrue(inside(a.ctypes.data, a.nbytes, base, length),
                                f"an array at {a.ctypes.data:#x} lies outside the batch's slot")
            t = b.torch()
            self.assertEqual(t.features.data_ptr(), x.ctypes.data, "torch copied the features")
            self.assertEqual(t.blocks[0].edge_src.data_ptr(), b.blocks[0].edge_src.ctypes.data)
            print(f"RESULT zero-copy: features {x.nbytes} B at {x.ctypes.data:#x} inside memfd slot "
                  f"{base:#x}+{length}")
        self.assertTrue(b.released)
        self.assertRaises(ValueError, b.torch)

    def test_grpc_arrays_view_the_received_buffer(self):
        with self.grpc.gather([3, 1, 4, 1, 5], "feat") as b:
            base, length = b.region()
            self.assertFalse(b.features.flags.owndata)
            self.assertTrue(inside(b.features.ctypes.data, b.features.nbytes, base, length))

    def test_arrays_keep_their_batch_until_they_are_gone(self):
        with featstore.connect(SERVER["unix"], slots=1) as c:
            x = c.gather([1, 2, 3], "feat").features  # the Batch object itself is dropped at once
            gc.collect()
            np.testing.assert_array_equal(x, dataset_array("table_feat.npy")[[1, 2, 3]])
            with self.assertRaises(featstore.Error) as e:  # the array still holds the only slot
                c.gather([0], "feat")
            self.assertEqual(e.exception.status, featstore.Status.RESOURCE)
            del x
            with c.gather([0], "feat") as b:  # the last view went: the slot came back
                self.assertEqual(b.rows, 1)

    def test_slots_run_out_and_come_back(self):
        with featstore.connect(SERVER["unix"], slots=2) as c:
            held = [c.gather([i], "feat") for i in range(2)]
            with self.assertRaisesRegex(featstore.Error, "slots") as e:
                c.gather([0], "feat")
            self.assertEqual(e.exception.status_name, "resource limit exceeded")
            held[0].release()
            held[0].release()  # idempotent
            c.gather([0], "feat").release()

    def test_c_errors_become_featstore_errors_with_the_c_message(self):
        for c in (self.unix, self.grpc):
            with self.assertRaises(featstore.Error) as e:
                c.gather([1], "no_such_table")
            self.assertEqual(e.exception.status, featstore.Status.NOT_FOUND)
            self.assertIn("no feature table 'no_such_table'; its feature tables: ", e.exception.message)
            self.assertIn("not found", str(e.exception))
            with self.assertRaises(featstore.Error) as e:
                c.gather([1, 2708], "feat")
            self.assertEqual(e.exception.status, featstore.Status.INVALID_ARGUMENT)
            self.assertIn("2708", e.exception.message)
            with self.assertRaises(featstore.Error) as e:
                c.split("holdout")
            self.assertEqual(e.exception.status, featstore.Status.NOT_FOUND)
        with self.assertRaises(featstore.Error) as e:
            featstore.connect("unix://" + os.path.join(SERVER["dir"], "nothing.sock"))
        self.assertEqual(e.exception.status, featstore.Status.UNAVAILABLE)
        with self.assertRaises(featstore.Error) as e:
            featstore.connect("http://localhost")
        self.assertEqual(e.exception.status, featstore.Status.INVALID_ARGUMENT)

    def test_bad_python_arguments_are_refused_before_c(self):
        c = self.unix
        self.assertRaisesRegex(TypeError, "integers", c.gather, [1.5], "feat")
        self.assertRaisesRegex(ValueError, "negative", c.gather, [3, -1], "feat")
        self.assertRaisesRegex(ValueError, "one-dimensional", c.gather, [[1, 2]], "feat")
        self.assertRaisesRegex(ValueError, "unknown dtype", c.gather, [1], "feat", dtype="float7")
        self.assertRaisesRegex(ValueError, "fanouts", c.sample, [1], [])
        self.assertRaisesRegex(ValueError, "fanouts", c.sample, [1], [10, 0])
        self.assertRaisesRegex(ValueError, "fanouts", c.sample, [1], [1] * 9)
        self.assertRaisesRegex(ValueError, "mode", c.sample, [1], [5], mode="biased")
        self.assertRaisesRegex(ValueError, "modes", c.sample, [1], [5, 5], mode=["uniform"])
        self.assertRaisesRegex(TypeError, "name", c.gather, [1], None)
        self.assertRaisesRegex(ValueError, "slots", featstore.connect, SERVER["unix"], slots=0)
        import torch
        with c.gather(torch.tensor([7, 8]), "feat") as b:  # CPU tensors are fine ids
            self.assertEqual(b.rows, 2)
        c.close()
        self.assertRaisesRegex(ValueError, "closed", c.info)

    def test_locality_option_and_load_ratio(self):
        seeds = self.unix.split("train")[:200]
        for c in (self.unix, self.grpc):
            with c.sample(seeds, [10, 5], seed=3) as a, c.sample(seeds, [10, 5], seed=3, locality=1) as b:
                np.testing.assert_array_equal(a.nodes, b.nodes)  # s = 1 is the plain sampler
                self.assertTrue(all(blk.edge_weights is None for blk in b.blocks))
            with self.assertRaises(featstore.Error) as e:  # no placement here: nothing to prefer
                c.sample(seeds, [10, 5], seed=3, locality=4)
            self.assertEqual(e.exception.status, featstore.Status.UNSUPPORTED)
            self.assertIn("needs a placement and a reader GPU", e.exception.message)
            for bad in (float("nan"), 0.5, -2, "sometimes"):
                self.assertRaisesRegex(ValueError, "locality", c.sample, seeds, [10, 5], locality=bad)
            self.assertEqual([c.report_load_ratio(r) for r in (0.5, 0.5, 0.1)], [2.0, 4.0, 3.0])  # Algorithm 2
            with self.assertRaises(featstore.Error) as e:
                c.report_load_ratio(1.5)
            self.assertEqual(e.exception.status, featstore.Status.INVALID_ARGUMENT)
            with self.assertRaises(featstore.Error) as e:  # "auto" now means s = 3
                c.sample(seeds, [10, 5], locality="auto")
            self.assertEqual(e.exception.status, featstore.Status.UNSUPPORTED)

    def test_locality_weights_with_a_placement(self):
        proc, ready = fs_serve.start(ARGS.featstore, SERVER["dataset"], os.path.join(SERVER["dir"], "placed.sock"),
                                     ["--topology", "pcie4", "--gpu-budget", "0.1", "--feature-first"],
                                     stderr=subprocess.DEVNULL)
        try:
            indptr = dataset_array("indptr.npy")
            seeds = self.unix.split("train")[:256]
            with featstore.connect("unix://" + ready["unix"], device="gpu:0") as c, \
                    c.sample_gather(seeds, [10, 5], "feat", seed=5, locality=4) as b, \
                    c.sample_gather(seeds, [10, 5], "feat", seed=5, locality=4) as again:
                base, length = b.region()
                for blk, blk2 in zip(b.blocks, again.blocks):
                    w = blk.edge_weights
                    self.assertEqual((w.dtype, w.shape), (np.float32, (blk.num_edges,)))
                    self.assertTrue(inside(w.ctypes.data, w.nbytes, base, length), "weights outside the slot")
                    self.assertTrue(np.all(np.isfinite(w) & (w >= 1)), "importance weights are 1/q >= 1")
                    np.testing.assert_array_equal(w, blk2.edge_weights)  # same request, same batch
                    deg = np.diff(indptr)[b.nodes[:blk.num_dst]]
                    whole = np.repeat(deg <= 10 if blk is b.blocks[0] else deg <= 5, np.diff(blk.dst_offsets))
                    self.assertTrue(np.all(w[whole] == 1), "rows taken whole weigh 1")
                t = b.torch()
                self.assertEqual(t.blocks[0].edge_weights.data_ptr(), b.blocks[0].edge_weights.ctypes.data)
                print(f"RESULT locality s=4 over unix:// gpu:0: {b.blocks[-1].num_edges} weighted edges in the "
                      f"last hop, zero-copy")
                # re-planning from Python: this connection follows; bad options raise with the C message
                self.assertEqual(c.replan(gpu_budget=0.3), 2)
                with c.sample_gather(seeds, [10, 5], "feat", seed=5) as after, \
                        self.unix.gather(after.nodes, "feat") as rows:
                    np.testing.assert_array_equal(after.features, rows.features)
                with self.assertRaisesRegex(featstore.Error, "bogus"):
                    c.replan(hotness="bogus")
                with self.assertRaisesRegex(featstore.Error, "nvlink=3"):
                    c.replan(alpha="nvlink=3")
                self.assertEqual(c.replan(alpha=0), 3)  # a number sets every link class
                self.assertEqual(c.replan(order="auto", reserve=1024), 4)
                with self.assertRaisesRegex(featstore.Error, "'1Q'"):
                    c.replan(reserve="1Q")
                with self.assertRaises(featstore.Error) as e:
                    self.grpc.replan(gpu_budget=0.3)
                self.assertEqual(e.exception.status, featstore.Status.UNSUPPORTED)
        finally:
            self.assertEqual(fs_serve.stop(proc), 0)

    def test_gpu_tiers_give_device_arrays(self):
        """A gpu:N trainer on device tiers (the simulated-GPU runtime, in a
        child process: the variable is read once per process) gets its
        features as a DeviceArray with __cuda_array_interface__, equal to
        the CPU trainer's rows; torch() names why it cannot without CUDA."""
        env = dict(os.environ, FEATSTORE_SIM_GPUS="4", PYTHONPATH=os.pathsep.join(sys.path))
        proc, ready = fs_serve.start(ARGS.featstore, SERVER["dataset"], os.path.join(SERVER["dir"], "gpus.sock"),
                                     ["--topology", "nvlink-pairs", "--gpu-budget", "0.2"], stderr=subprocess.DEVNULL,
                                     env=env)
        script = """
import ctypes, sys
import numpy as np
import featstore
uri, seeds = sys.argv[1], np.arange(0, 2000, 7, dtype=np.int64)
with featstore.connect(uri, device="gpu:1") as g, featstore.connect(uri) as c, \\
        g.sample_gather(seeds, [10, 5], "feat", seed=3) as gb, c.sample_gather(seeds, [10, 5], "feat", seed=3) as cb:
    assert isinstance(gb.features, featstore.DeviceArray) and gb.features_device == 1, gb.features
    assert cb.features_device is None and isinstance(cb.features, np.ndarray)
    cai = gb.features.__cuda_array_interface__
    assert cai["shape"] == cb.features.shape and cai["typestr"] == cb.features.dtype.str and cai["version"] == 3
    n = cb.features.size  # simulated device memory is host memory: read it in place
    rows = np.ctypeslib.as_array((ctypes.c_float * n).from_address(cai["data"][0])).reshape(cai["shape"])
    np.testing.assert_array_equal(gb.nodes, cb.nodes)
    np.testing.assert_array_equal(rows, cb.features)
    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None and not torch.cuda.is_available():
        try:
            gb.torch()
            raise AssertionError("torch() without CUDA")
        except RuntimeError as e:
            assert "GPU 1" in str(e), e
    print("OK", gb.features)
"""
        try:
            out = subprocess.run([sys.executable, "-c", script, "unix://" + ready["unix"]], env=env,
                                 capture_output=True, text=True, timeout=120)
            self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
            self.assertIn("OK <featstore.DeviceArray float32", out.stdout)
        finally:
            self.assertEqual(fs_serve.stop(proc), 0)

    def test_stats_counts_the_calls(self):
        self.grpc.gather([0], "feat").release()
        text = self.unix.stats()  # the server's metrics, whichever transport asks
        self.assertIn('featstore_requests_total{method="Gather",transport="grpc"}', text)
        self.assertIn("featstore_dataset_nodes", text)


# ---- security: grpcs:// and tokens ----------------------------------------------

class SecurityTest(unittest.TestCase):
    """A server with TLS and a bearer token (a throw-away PKI from
    tests/lib/make_test_certs.sh): the Python client over grpcs:// with the CA and
    the token gives the unix:// batches bit for bit; a wrong or missing token
    raises without showing a token; the settings also come from the environment."""

    TOKEN = "py-tok-91c2"

    @classmethod
    def setUpClass(cls):
        if shutil.which("openssl") is None:
            raise unittest.SkipTest("the openssl command is missing (Debian: openssl)")
        cls.dir = tempfile.mkdtemp(prefix="featstore-tls-")
        cls.pki = os.path.join(cls.dir, "pki")
        subprocess.run(["sh", os.path.join(ROOT, "tests", "lib", "make_test_certs.sh"), cls.pki], check=True)
        token = os.path.join(cls.dir, "token")
        with open(token, "w") as f:
            f.write(cls.TOKEN + "\n")
        proc, ready = fs_serve.start(ARGS.featstore, SERVER["dataset"], os.path.join(cls.dir, "s.sock"),
                                     ["--tls-cert", os.path.join(cls.pki, "server.pem"),
                                      "--tls-key", os.path.join(cls.pki, "server.key"), "--token-file", token])
        cls.proc, cls.unix, cls.grpcs = proc, "unix://" + ready["unix"], "grpcs://" + ready["grpc"]
        cls.ca = os.path.join(cls.pki, "ca.pem")

    @classmethod
    def tearDownClass(cls):
        if hasattr(cls, "proc"):
            fs_serve.stop(cls.proc)
        shutil.rmtree(cls.dir, ignore_errors=True)

    def test_grpcs_with_the_token_gives_the_unix_batches(self):
        with featstore.connect(self.unix) as u, \
                featstore.connect(self.grpcs, tls_ca_file=self.ca, token=self.TOKEN, timeout_ms=30000) as g:
            self.assertEqual(g.transport, "grpc")
            seeds = u.split("train")[:300]
            np.testing.assert_array_equal(seeds, g.split("train")[:300])
            with u.sample_gather(seeds, [25, 10], "feat", seed=5) as a, g.sample_gather(seeds, [25, 10], "feat",
                                                                                         seed=5) as b:
                for x, y in [(a.nodes, b.nodes), (a.seed_local, b.seed_local), (a.features, b.features)]:
                    np.testing.assert_array_equal(x, y)
                for x, y in zip(a.blocks, b.blocks):
                    for f in ("dst_offsets", "edge_dst", "edge_src"):
                        np.testing.assert_array_equal(getattr(x, f), getattr(y, f))

    def test_a_wrong_or_missing_token_is_refused_without_showing_it(self):
        env = os.environ.pop("FEATSTORE_TOKEN", None)
        try:
            for token, says in (("py-tok-wrong", "not this server's"), (None, "requires a bearer token")):
                with featstore.connect(self.grpcs, tls_ca_file=self.ca, token=token) as g:
                    with self.assertRaises(featstore.Error) as e:
                        g.info()
                    self.assertEqual(e.exception.status, featstore.Status.PERMISSION)
                    self.assertIn(says, e.exception.message)
                    self.assertNotIn("py-tok", e.exception.message)
        finally:
            if env is not None:
                os.environ["FEATSTORE_TOKEN"] = env
        with self.assertRaises(featstore.Error) as e:  # plaintext to a TLS server
            featstore.connect(self.grpcs.replace("grpcs://", "grpc://"), token=self.TOKEN)
        self.assertIn("cannot connect", e.exception.message)
        with self.assertRaises(TypeError):
            featstore.connect(self.grpcs, token=42)

    def test_settings_come_from_the_environment(self):
        saved = {k: os.environ.get(k) for k in ("FEATSTORE_TLS_CA", "FEATSTORE_TOKEN")}
        os.environ.update(FEATSTORE_TLS_CA=self.ca, FEATSTORE_TOKEN=self.TOKEN)
        try:
            with featstore.connect(self.grpcs) as g:
                self.assertEqual(g.info().num_nodes, 2708)
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v


# ---- GraphSAGE through featstore ---------------------------------------------------

# ---- a dataset with many tables and splits --------------------------------------

def write_wide_dataset(path, tables=20, splits=10, nodes=50):
    """A ring of `nodes` nodes with `tables` feature tables (table k: dim k+1,
    float32 for even k and float16 for odd, row v = v*40+k+j) and `splits`
    splits (split k: the nodes v % splits == k, descending), written with
    numpy in the dataset format (docs: docs/format.md)."""
    os.makedirs(path)
    save = lambda name, a: np.save(os.path.join(path, name), a)
    save("indptr.npy", np.arange(nodes + 1, dtype=np.int64))
    save("indices.npy", ((np.arange(nodes) + 1) % nodes).astype(np.int32))
    features, parts = {}, {}
    for k in range(tables):
        dtype = np.float16 if k % 2 else np.float32
        rows = np.arange(nodes)[:, None] * 40 + k + np.arange(k + 1)[None, :]
        save(f"table_t{k:02d}.npy", rows.astype(dtype))
        features[f"t{k:02d}"] = {"file": f"table_t{k:02d}.npy", "dtype": np.dtype(dtype).name}
    for k in range(splits):
        save(f"split_s{k}.npy", np.arange(k, nodes, splits, dtype=np.int64)[::-1].copy())
        parts[f"s{k}"] = f"split_s{k}.npy"
    manifest = {"format": "featstore-dataset", "version": 1, "name": "wide", "num_nodes": nodes,
                "num_edges": nodes, "symmetric": False,
                "topology": {"indptr": "indptr.npy", "indices": "indices.npy"},
                "features": features, "splits": parts}
    with open(os.path.join(path, "manifest.json"), "w") as f:
        json.dump(manifest, f)


class WideDatasetTest(unittest.TestCase):
    """Info lists every table and split, whatever their number, over both transports."""

    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="featstore-wide-")
        write_wide_dataset(os.path.join(cls.dir, "wide"))
        cls.server = start_server(os.path.join(cls.dir, "wide"), os.path.join(cls.dir, "s.sock"))

    @classmethod
    def tearDownClass(cls):
        fs_serve.stop(cls.server["proc"])
        shutil.rmtree(cls.dir, ignore_errors=True)

    def test_twenty_tables_and_ten_splits(self):
        for uri in (self.server["unix"], self.server["grpc"]):
            with featstore.connect(uri) as c:
                info = c.info()
                self.assertEqual(len(info.tables), 20, uri)
                self.assertEqual(len(info.splits), 10, uri)
                for k in range(20):
                    self.assertEqual(info.tables[f"t{k:02d}"],
                                     featstore.TableInfo(f"t{k:02d}", "float16" if k % 2 else "float32", 50, k + 1))
                for k in range(10):
                    np.testing.assert_array_equal(c.split(f"s{k}"), np.arange(k, 50, 10)[::-1])
                with c.gather([49, 0, 7], "t19", "float32") as b:
                    want = np.array([49, 0, 7])[:, None] * 40 + 19 + np.arange(20)[None, :]
                    np.testing.assert_array_equal(b.features, want.astype(np.float32))
        print("RESULT python info lists 20 tables and 10 splits over unix:// and grpc://")


class TypedInfoTest(unittest.TestCase):
    """A typed dataset (gen rmat --typed) served: Info's node types, edge
    types and link splits, and its typed split names, over both transports,
    against the dataset's own manifest and files."""

    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="featstore-typed-")
        cls.data = os.path.join(cls.dir, "typed")
        subprocess.run([ARGS.featstore, "gen", "rmat", "--typed", "--scale", "6", "--edge-factor", "4", "--dim", "4",
                        "--out", cls.data], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        with open(os.path.join(cls.data, "manifest.json")) as f:
            cls.manifest = json.load(f)
        cls.server = start_server(cls.data, os.path.join(cls.dir, "s.sock"))

    @classmethod
    def tearDownClass(cls):
        fs_serve.stop(cls.server["proc"])
        shutil.rmtree(cls.dir, ignore_errors=True)

    def file(self, name):
        return np.load(os.path.join(self.data, name))

    def check_info(self, info):
        m = self.manifest
        self.assertTrue(info.hetero and info.typed)  # typed: hetero's 1.3 name, kept
        self.assertEqual((info.num_nodes, info.tables, info.splits), (0, {}, ()))
        self.assertEqual(list(info.node_types), [t["name"] for t in m["node_types"]], "the server's order")
        for t in m["node_types"]:
            nt = info.node_types[t["name"]]
            self.assertEqual((nt.name, nt.count, nt.timed), (t["name"], t["count"], "time" in t))
            want_tables = list(t.get("features", {})) + (["labels"] if "labels" in t else [])
            self.assertEqual(list(nt.tables), want_tables)
            self.assertEqual(nt.tables["feat"], featstore.TableInfo("feat", "float32", t["count"], 4))
            self.assertEqual(nt.num_classes, t.get("labels", {}).get("num_classes", 0))
            self.assertEqual(nt.splits, tuple(t.get("splits", {})))
        keys = [(e["src"], e["rel"], e["dst"]) for e in m["edge_types"]]
        self.assertEqual(list(info.edge_types), keys, "(src, rel, dst) tuples in the server's order")
        for e, et in zip(m["edge_types"], info.edge_types):
            self.assertEqual((et.src, et.rel, et.dst, et.num_edges), (e["src"], e["rel"], e["dst"], e["num_edges"]))
            self.assertEqual((et.weighted, et.timed), ("weights" in e, "time" in e))
            self.assertEqual(et.reverse, (e["dst"], e["reverse"], e["src"]) if "reverse" in e else None)
            self.assertEqual(list(et.tables), list(e.get("features", {})))
        self.assertIn(("paper", "cites", "paper"), {k: 1 for k in info.edge_types}, "usable as dict keys")
        self.assertEqual(list(info.link_splits), list(m["link_splits"]))
        for name, l in m["link_splits"].items():
            ls = info.link_splits[name]
            self.assertEqual((ls.name, ls.edge_type, ls.count), (name, tuple(l["edge_type"]), len(self.file(l["src"]))))
            self.assertEqual((ls.labelled, ls.timed, ls.num_neg), ("label" in l, "time" in l, 0))

    def test_typed_info_and_split_names_over_both_transports(self):
        m = self.manifest
        for uri in (self.server["unix"], self.server["grpc"]):
            with featstore.connect(uri) as c:
                self.check_info(c.info())
                for split, file in m["node_types"][0]["splits"].items():
                    np.testing.assert_array_equal(c.split(f"paper/{split}"), self.file(file))
                for name, l in m["link_splits"].items():
                    for array in ("src", "dst", "time"):
                        np.testing.assert_array_equal(c.split(f"link/{name}/{array}"), self.file(l[array]))
                with self.assertRaises(featstore.Error) as e:
                    c.split("train")
                self.assertEqual(e.exception.status, featstore.Status.NOT_FOUND)
                self.assertIn("ask for paper/train", str(e.exception))
                with self.assertRaises(featstore.Error) as e:
                    c.split("link/train/label")
                self.assertIn("link split 'train' has no array 'label'; it has src, dst, time", str(e.exception))
        with featstore.connect(SERVER["unix"]) as c:  # a homogeneous dataset: one node type, one edge type
            info = c.info()
            self.assertFalse(info.hetero or info.typed)
            self.assertEqual(list(info.node_types), ["node"])
            self.assertEqual(info.node_types["node"].count, info.num_nodes)
            self.assertEqual(info.node_types["node"].tables, info.tables)
            self.assertEqual(info.node_types["node"].splits, info.splits)
            self.assertEqual(info.edge_types, (("node", "to", "node"),))
            self.assertEqual((info.edge_types[0].num_edges, info.edge_types[0].reverse), (info.num_edges, None))
            self.assertEqual(info.link_splits, {})
        print("RESULT python typed info: node types, edge types, link splits and split names over unix:// and grpc://")


def load_example():
    spec = importlib.util.spec_from_file_location("train_graphsage", os.path.join(ROOT, "examples",
                                                                                  "train_graphsage.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class GraphSAGETest(unittest.TestCase):
    def train(self, example, uri, seed):
        args = example.parse_args(["--uri", uri, "--epochs", str(ARGS.epochs), "--seed", str(seed),
                                   "--lr", "0.01", "--hidden", "128", "--dropout", "0.5", "--torch-threads", "1"])
        t0 = time.perf_counter()
        result = example.run(args, log=lambda line: None)
        result["seconds"] = time.perf_counter() - t0
        return result

    def test_graphsage_learns_cora_the_same_over_both_transports(self):
        example = load_example()
        runs = {}
        for transport in ("unix", "grpc"):
            runs[transport] = [self.train(example, SERVER[transport], seed) for seed in range(ARGS.seeds)]
            for seed, r in enumerate(runs[transport]):
                print(f"RESULT graphsage transport={transport} seed={seed} test_acc={r['test_acc']:.4f} "
                      f"valid_acc={r['valid_acc']:.4f} best_epoch={r['best_epoch']} "
                      f"batches_per_s={r['batches_per_s']:.1f} seconds={r['seconds']:.1f}")
        mean = {t: float(np.mean([r["test_acc"] for r in rs])) for t, rs in runs.items()}
        rate = {t: float(np.mean([r["batches_per_s"] for r in rs])) for t, rs in runs.items()}
        for t in runs:
            print(f"RESULT graphsage transport={t} mean_test_acc={mean[t]:.4f} over {ARGS.seeds} seeds, "
                  f"{rate[t]:.1f} mini-batches/s")
        self.assertGreaterEqual(mean["unix"], 0.82, "GraphSAGE on Cora should reach 0.82 test accuracy")
        self.assertGreaterEqual(min(r["test_acc"] for r in runs["unix"]), 0.78)
        self.assertAlmostEqual(mean["unix"], mean["grpc"], delta=0.01,
                               msg="the same requests over grpc:// should train the same model")

    def test_the_script_runs_an_epoch_over_grpc(self):
        env = dict(os.environ, FEATSTORE_LIB=ARGS.lib)
        out = subprocess.run([sys.executable, os.path.join(ROOT, "examples", "train_graphsage.py"), "--uri",
                              SERVER["grpc"], "--epochs", "1", "--torch-threads", "1"],
                             env=env, capture_output=True, text=True, timeout=300)
        self.assertEqual(out.returncode, 0, out.stderr)
        lines = out.stdout.splitlines()
        self.assertIn("transport=grpc", lines[0])
        self.assertRegex(out.stdout, r"epoch +1  loss \d+\.\d+  valid_acc 0\.\d+  \d+\.\d mini-batches/s")
        self.assertRegex(lines[-1], r"^test_acc=0\.\d{4} ")
        bad = subprocess.run([sys.executable, os.path.join(ROOT, "examples", "train_graphsage.py"), "--uri",
                              SERVER["grpc"], "--table", "nope"], env=env, capture_output=True, text=True,
                             timeout=120)
        self.assertNotEqual(bad.returncode, 0)
        self.assertIn("no table 'nope'", bad.stderr)


def main():
    global ARGS, featstore, np
    ARGS, rest = parse_args()
    require_modules()
    os.environ["FEATSTORE_LIB"] = ARGS.lib  # before featstore loads the library
    sys.path.insert(0, os.path.join(ROOT, "client-lib", "python"))
    import numpy as np
    import featstore
    t0 = time.perf_counter()
    prog = unittest.main(argv=[sys.argv[0]] + rest, exit=False, verbosity=2)
    print(f"RESULT test_python took {time.perf_counter() - t0:.1f} s")
    sys.exit(0 if prog.result.wasSuccessful() else 1)


if __name__ == "__main__":
    main()
else:  # collected by pytest (tests/conftest.py): the build the environment names
    ARGS = fs_serve.pytest_args(("numpy", "torch"), epochs=10, seeds=3)
    import numpy as np
    import featstore
