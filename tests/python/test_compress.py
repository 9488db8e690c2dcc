#!/usr/bin/python3
"""test_compress.py — compressed feature tables (`featstore compress`,
docs/format.md "Compressed tables"; issue 51): made by the command and
served by a live `featstore serve`.

int8: the file holds, per row, the scale, the bias and the codes; every
value read back (numpy's decode of the file, by the format's definition) is
within the printed bound of the source. Over unix:// and grpc://, plain
gathers, sampled batches, hetero (PyG's) calls and epoch streams serve a
compressed table as float32 by default, equal to the decode, and as stored
with dtype="stored" (featstore.dequantize gives the same float32 back).
float16 and bfloat16 copies are the rounded values. The same int8 table
served from disk (`--mem-budget`), or by a sharded cluster of its
partitions (etcd://; skipped without etcd), decodes the same. Bad input names the
problem and changes nothing: an unknown table, the labels, a compressed
table, a value float16 cannot hold, a non-finite value, a name taken (an
earlier compress's is replaced only with --force), a wrong --to.

    /usr/bin/python3 tests/python/test_compress.py --featstore BUILD/cli/featstore --lib BUILD/client-lib/libfeatstore.so
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))  # tests/lib: fs_serve
import fs_serve  # noqa: E402

ARGS = None
np = featstore = None


def run(*args, ok=True):
    p = subprocess.run([ARGS.featstore, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=300)
    if ok and p.returncode != 0:
        raise AssertionError(f"featstore {' '.join(args)} failed ({p.returncode}): {p.stderr}")
    return p


def decode_int8(raw):
    """The format's definition, independent of the library: float32 scale,
    float32 bias, then int8 codes; value = code * scale + bias in float32."""
    head = np.ascontiguousarray(raw[:, :8]).view(np.float32)
    codes = raw[:, 8:].astype(np.float32)
    return (codes * head[:, :1]).astype(np.float32) + head[:, 1:]


class Compress(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="fs-compress-")
        cls.data = os.path.join(cls.tmp, "g")
        run("gen", "rmat", "--scale", "11", "--dim", "48", "--symmetrize", "--out", cls.data, "--force")
        cls.feat = np.load(os.path.join(cls.data, "table_feat.npy"))
        cls.out = run("compress", cls.data, "--table", "feat", "--to", "int8").stderr
        run("compress", cls.data, "--table", "feat", "--to", "fp16")
        run("compress", cls.data, "--table", "feat", "--to", "bf16", "--name", "feat_b")
        cls.manifest = json.load(open(os.path.join(cls.data, "manifest.json")))
        cls.raw = np.load(os.path.join(cls.data, cls.manifest["features"]["feat_int8"]["file"]))
        cls.decoded = decode_int8(cls.raw)
        cls.procs = []

    @classmethod
    def tearDownClass(cls):
        for p in cls.procs:
            if p.poll() is None:
                fs_serve.stop(p)
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def serve(self, extra=()):
        """(unix:// URI, grpc:// URI) of a new server of the dataset."""
        sock = os.path.join(self.tmp, f"s{len(self.procs)}")
        self.log = sock + ".log"
        with open(self.log, "w") as log:
            proc, ready = fs_serve.start(ARGS.featstore, self.data, sock, extra=list(extra), stderr=log)
        self.procs.append(proc)
        return f"unix://{sock}", f"grpc://{ready['grpc']}"

    def test_int8_file_is_within_the_printed_bound(self):
        n, d = self.feat.shape
        self.assertEqual(self.raw.dtype, np.int8)
        self.assertEqual(self.raw.shape, (n, d + 8))
        entry = self.manifest["features"]["feat_int8"]
        self.assertEqual((entry["dtype"], entry["codec"], entry["source"]), ("int8", "int8", "feat"))
        err = np.abs(self.decoded.astype(np.float64) - self.feat)
        span = self.feat.max(axis=1).astype(np.float64) - self.feat.min(axis=1)
        self.assertTrue((err <= span[:, None] / 510 * (1 + 1e-6) + 1e-7).all(), "a value beyond half a step")
        printed = float(self.out.split("bound ")[1].split()[0])
        self.assertLessEqual(err.max(), printed * (1 + 1e-3))
        self.assertAlmostEqual(float(entry["max_abs_error"]), err.max(), delta=err.max() * 1e-3 + 1e-12)
        self.assertIn(f"{(d + 8) / (4 * d):.3f}x", self.out)  # the bytes, after over before

    def test_half_copies_are_the_rounded_values(self):
        f16 = np.load(os.path.join(self.data, self.manifest["features"]["feat_float16"]["file"]))
        np.testing.assert_array_equal(f16, self.feat.astype(np.float16))
        b16 = np.load(os.path.join(self.data, self.manifest["features"]["feat_b"]["file"]))
        self.assertEqual(b16.dtype, np.uint16)  # bfloat16's bits
        self.assertEqual(self.manifest["features"]["feat_b"]["codec"], "narrow")
        back = (b16.astype(np.uint32) << 16).view(np.float32)
        self.assertLessEqual(np.abs(back - self.feat).max(), np.abs(self.feat).max() * 2 ** -8)

    def check_client(self, c):
        info = c.info().tables["feat_int8"]
        n, d = self.feat.shape
        self.assertEqual((info.dtype, info.dim, info.codec, info.stored_dtype, info.stored_dim),
                         ("float32", d, "int8", "int8", d + 8))
        ids = np.random.default_rng(5).integers(0, n, 2000)
        with c.gather(ids, "feat_int8") as b:
            self.assertEqual(b.dtype, "float32")
            np.testing.assert_array_equal(b.features, self.decoded[ids])
        with c.gather(ids, "feat_int8", dtype="stored") as b:
            self.assertEqual((b.dtype, b.features.shape), ("int8", (len(ids), d + 8)))
            np.testing.assert_array_equal(b.features, self.raw[ids])
            np.testing.assert_array_equal(featstore.dequantize(b.features), self.decoded[ids])
        with c.gather(ids, "feat_float16") as b:
            self.assertEqual(b.dtype, "float32")
            np.testing.assert_array_equal(b.features, self.feat[ids].astype(np.float16).astype(np.float32))
        with c.gather(ids, "feat_float16", dtype="stored") as b:
            self.assertEqual(b.dtype, "float16")
        with self.assertRaises(featstore.Error) as e:
            c.gather(ids, "feat_int8", dtype="float16")
        self.assertIn("'feat_int8' is int8", str(e.exception))
        with c.sample_gather(ids[:64], [5, 5], "feat_int8", seed=2) as b:
            np.testing.assert_array_equal(b.features, self.decoded[b.nodes])
        for dt in (None, "stored"):
            h = c.hetero_sample({"node": ids[:64]}, {("node", "to", "node"): [5, 5]}, node_tables=["feat_int8"], seed=2,
                                dtype=dt)
            want = self.decoded if dt is None else self.raw
            np.testing.assert_array_equal(h.x["node"]["feat_int8"], want[h.nodes["node"]])
            h.release()
        for dt, want in ((None, self.decoded), ("stored", self.raw)):
            for sb in c.node_stream(ids[:300], batch_size=100, num_neighbors=[4], table="feat_int8", seed=3, dtype=dt):
                np.testing.assert_array_equal(sb.batch.features, want[sb.batch.nodes])

    def test_served_as_float32_or_as_stored_over_both_transports(self):
        for uri in self.serve():
            with self.subTest(uri=uri), featstore.connect(uri) as c:
                self.check_client(c)

    def test_int8_rows_from_disk_decode_the_same(self):
        uris = self.serve(["--mem-budget", "1M"])
        self.assertRegex(open(self.log).read(), r"table 'feat_int8' \(.*\) is served from disk")
        for uri in uris:
            with self.subTest(uri=uri), featstore.connect(uri) as c:
                ids = np.random.default_rng(6).integers(0, len(self.feat), 3000)
                with c.gather(ids, "feat_int8") as b:
                    np.testing.assert_array_equal(b.features, self.decoded[ids])
                with c.gather(ids, "feat_int8", dtype="stored") as b:
                    np.testing.assert_array_equal(b.features, self.raw[ids])

    def test_a_sharded_cluster_serves_them_the_same(self):
        if not fs_serve.etcd_bin():
            self.skipTest("no etcd installed (apt-get install etcd-server)")
        parts = os.path.join(self.tmp, "parts")
        run("partition", self.data, "--parts", "2", "--out", parts)
        proc, endpoint = fs_serve.start_etcd(self.tmp)
        self.procs.append(proc)
        sock = os.path.join(self.tmp, "shard1.sock")  # one shard answered in process, one over gRPC
        for k, sock_k in ((0, None), (1, sock)):
            self.procs.append(fs_serve.start_shard(ARGS.featstore, parts, str(k), endpoint, "z", k, socket=sock_k,
                                                   stderr=subprocess.DEVNULL)[0])
        with featstore.connect(f"etcd://{endpoint}/z") as c:
            self.assertEqual(c.info().tables["feat_int8"].codec, "int8")
            ids = np.random.default_rng(7).integers(0, len(self.feat), 1500)
            with c.gather(ids, "feat_int8") as b:
                np.testing.assert_array_equal(b.features, self.decoded[ids])
            with c.gather(ids, "feat_int8", dtype="stored") as b:
                np.testing.assert_array_equal(b.features, self.raw[ids])
            h = c.hetero_sample({"node": ids[:64]}, {("node", "to", "node"): [5, 5]}, node_tables=["feat_int8"], seed=2)
            np.testing.assert_array_equal(h.x["node"]["feat_int8"], self.decoded[h.nodes["node"]])
            h.release()

    def refused(self, data, args, needle):
        before = open(os.path.join(data, "manifest.json")).read()
        p = run("compress", data, *args, ok=False)
        self.assertNotEqual(p.returncode, 0, args)
        self.assertIn(needle, p.stderr, args)
        self.assertEqual(open(os.path.join(data, "manifest.json")).read(), before, "the dataset changed")

    def test_bad_input_is_refused_and_changes_nothing(self):
        d = self.data
        self.refused(d, ["--table", "nope", "--to", "int8"], "no feature table 'nope'")
        self.refused(d, ["--table", "labels", "--to", "int8"], "only float32, float16 and bfloat16 tables")
        self.refused(d, ["--table", "feat_int8", "--to", "int8"], "compressed already")
        self.refused(d, ["--table", "feat", "--to", "int4"], "--to must be int8, float32, float16 or bfloat16")
        self.refused(d, ["--table", "feat", "--to", "f32"], "--to must be int8, float16 (fp16) or bfloat16 (bf16)")
        self.refused(d, ["--table", "feat", "--to", "int8"], "(from an earlier compress; --force replaces it)")
        self.refused(d, ["--table", "feat", "--to", "int8", "--name", "labels"], "cannot name a table")
        self.refused(d, ["--table", "feat,feat_float16", "--to", "int8", "--name", "x"], "--name names one new table")
        other = os.path.join(self.tmp, "odd")
        shutil.copytree(d, other)
        path = os.path.join(other, "table_feat.npy")
        a = np.load(path)
        a[7, 3] = 1e6
        a[9, 1] = np.inf
        np.save(path, a)
        m = json.load(open(os.path.join(other, "manifest.json")))
        del m["files"]["table_feat.npy"]  # an edited file: no recorded checksum to fail first
        json.dump(m, open(os.path.join(other, "manifest.json"), "w"))
        self.refused(other, ["--table", "feat", "--to", "fp16", "--name", "h"], "row 7, column 3: value 1e+06 does "
                     "not fit float16")
        self.refused(other, ["--table", "feat", "--to", "int8", "--name", "q"], "row 9, column 1: value inf is not "
                     "finite")
        self.assertFalse([f for f in os.listdir(other) if f.startswith(".compress-")], "scratch left behind")

    def test_force_replaces_an_earlier_compress(self):
        other = os.path.join(self.tmp, "again")
        shutil.copytree(self.data, other)
        old = json.load(open(os.path.join(other, "manifest.json")))["features"]["feat_int8"]["file"]
        run("compress", other, "--table", "feat", "--to", "int8", "--force")
        m = json.load(open(os.path.join(other, "manifest.json")))
        self.assertNotEqual(m["features"]["feat_int8"]["file"], old)
        self.assertFalse(os.path.exists(os.path.join(other, old)), "the replaced file stays")
        self.assertNotIn(old, m["files"])
        run("info", other)


def main():
    global ARGS, np, featstore
    ARGS, rest = fs_serve.client_test_args(__doc__)
    import numpy
    np = numpy
    import featstore as fs
    featstore = fs
    fs_serve.run_tests("compress", rest)


if __name__ == "__main__":
    main()
else:  # collected by pytest (tests/conftest.py): the build the environment names
    ARGS = fs_serve.pytest_args(("numpy",))
    import numpy as np
    import featstore
