#!/usr/bin/python3
"""test_python_stream_kinds.py — row, typed and link streams from Python
(``Client.row_stream``, ``hetero_stream``, ``link_stream`` and the
deprecated ``Client.stream`` with ``tables=``, ``num_neighbors=``,
``link=``), each class on a dataset and server of its own (node streams:
tests/python/test_python_stream.py).

Row streams (RowStreamTest, RowLayoutStreamTest) on Cora with hop tables
from `featstore propagate`: every batch's tables are gather() of its seeds
and its labels gather(labels); chunked with chunk = batch size, every batch
is one run of consecutive split positions (over a labelled layout's row
tables, read by row in bulk, equal to the files); sampling options are
refused by name.

Typed and link streams (``num_neighbors=``, ``link=``), the checks of
tests/integration/streams/test_stream_typed.c: TypedStreamTest starts its own server on a typed
R-MAT (``featstore gen rmat --typed --scale 11``: papers, authors, venues,
link splits of cites with times). Over both transports: every typed stream
batch is the explicit ``hetero_sample({"paper": batch.seeds},
num_neighbors, seed=batch.request_seed, ...)`` in every array (each type's
nodes and tables, every block with its edge ids and edge table, seed groups)
with ``batch`` and ``labels`` None, and one rank's epoch covers
"paper/train"; every link stream batch (sequential, rank 1 of 2) is
``link_sample`` on the link split's src, dst and times at the rank's
positions, its seeds the src column (binary negatives; a dict and a
StreamLink; triplet negatives over unix://); bad typed options raise the C
message (an unknown edge type, node type or table, labels= on a typed
stream, a link stream without num_neighbors or with a seed array, a node
stream on a typed graph) and the binding's own a ValueError or TypeError
naming them (fanouts, table, delta, window or edge_ids with num_neighbors,
typed options without it, bad link keys). Over unix:// also: ``hetero`` is
a zero-copy view of the stream batch's memory that ends with it, arrays
kept past release keep their data, and the batch is freed once; explicit
seeds with seed_type; the deprecated Client.stream opens the same typed and
link streams (link as a dict and a StreamLink); hetero_sample's and
link_sample's old argument names warn and mean the same.

    tests/python/test_python_stream_kinds.py --featstore BUILD/cli/featstore --lib BUILD/client-lib/libfeatstore.so

Exits 77 (ctest's skip) when numpy is missing.
"""
import gc
import importlib.util
import json
import os
import shutil
import sys
import tempfile
import unittest
import warnings

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))  # tests/lib: fs_serve
import fs_serve  # noqa: E402
from stream_checks import assert_same_hetero  # noqa: E402

ARGS = None  # parsed in main()
np = featstore = None  # imported by main(), once the skip check passed

TRANSPORTS = ("unix", "grpc")

CITES, WRITES = ("paper", "cites", "paper"), ("author", "writes", "paper")
NUM_NEIGHBORS = {CITES: [5, 3], WRITES: [3, 0]}  # tests/integration/streams/test_stream_typed.c's request
NODE_TABLES = ("feat", "labels")


class _Served(unittest.TestCase):
    """A dataset made by make_dataset(dir) and served on its own for the
    class: cls.data, cls.uris (unix and grpc)."""

    @classmethod
    def make_dataset(cls, out_dir):
        raise NotImplementedError

    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix=f"featstore-pystream-{cls.__name__}-")
        try:
            cls.data = cls.make_dataset(cls.dir)
            cls.proc, ready = fs_serve.start(ARGS.featstore, cls.data, os.path.join(cls.dir, "s.sock"))
        except Exception:
            shutil.rmtree(cls.dir, ignore_errors=True)
            raise
        cls.uris = {"unix": "unix://" + ready["unix"], "grpc": "grpc://" + ready["grpc"]}

    @classmethod
    def tearDownClass(cls):
        try:
            status = fs_serve.stop(cls.proc)
            if status != 0:
                raise AssertionError(f"featstore serve ({cls.__name__}) exited {status} on SIGTERM, expected 0")
        finally:
            shutil.rmtree(cls.dir, ignore_errors=True)


class _PropagatedCora(_Served):
    """Cora with hop tables hop_0..hop_2 (`featstore propagate --rows ROWS`)."""

    ROWS = "all"

    @classmethod
    def make_dataset(cls, out_dir):
        cora = fs_serve.import_cora(ARGS.featstore, os.path.join(out_dir, "c"))
        return fs_serve.propagate(ARGS.featstore, cora, 2, rows=cls.ROWS)


class RowStreamTest(_PropagatedCora):
    """Row streams (tables=) on Cora with hop tables from `featstore
    propagate`: every batch's tables are gather() of its seeds and its labels
    gather(labels); chunked with chunk = batch size, every batch is one run
    of consecutive split positions; sampling options are refused."""

    ROWS = "all"

    def test_every_batch_is_the_gather_of_every_table(self):
        hops = ["hop_0", "hop_1", "hop_2"]
        for t in TRANSPORTS:
            with self.subTest(transport=t), featstore.connect(self.uris[t]) as c:
                train = c.split("train")
                position = {int(v): i for i, v in enumerate(train)}
                with c.row_stream("train", batch_size=64, tables=hops, order="chunked", chunk=64, seed=3) as s:
                    seen = []
                    for sb in s:
                        self.assertIsNone(sb.batch)
                        self.assertEqual(len(sb.tables), 3)
                        at = [position[int(v)] for v in sb.seeds]
                        self.assertEqual(at, list(range(at[0], at[0] + len(at))), "one run of split positions")
                        self.assertEqual(at[0] % 64, 0)
                        for name, got in zip(hops, sb.tables):
                            with c.gather(sb.seeds, name) as want:
                                np.testing.assert_array_equal(got.features, want.features, f"{t} {name}")
                        with c.gather(sb.seeds, "labels") as want:
                            np.testing.assert_array_equal(sb.labels, want.features[:, 0])
                        seen.append(np.array(sb.seeds))
                np.testing.assert_array_equal(np.sort(np.concatenate(seen)), np.sort(train))
                with self.assertRaises(ValueError) as e, self.assertWarns(DeprecationWarning):
                    c.stream(split="train", batch_size=64, tables=hops, fanouts=[5])  # the deprecated call
                self.assertIn("fanouts", str(e.exception))
                with self.assertRaisesRegex(TypeError, "num_neighbors"):
                    c.row_stream("train", batch_size=64, tables=hops, num_neighbors=[5])
                with self.assertRaises(featstore.Error) as e:
                    c.row_stream("train", batch_size=64, tables=["hop_0", "hop_7"])
                self.assertIn("hop_7", str(e.exception))
        print("RESULT python row streams: hop_0..hop_2 of propagated Cora, chunked, = gather per table, "
              "over unix:// and grpc://")


class RowLayoutStreamTest(_PropagatedCora):
    """Row streams over row tables (`propagate --rows labelled` on Cora):
    Info lists the row tables and each split's rows; a chunked stream reads
    the split's rows by row, one run per batch (ranges), and every table's
    rows, the seeds (the rows' nodes) and their labels equal the dataset's
    files read here with numpy."""

    ROWS = "labelled"

    def files(self):
        """The dataset's arrays, from its manifest and .npy files."""
        with open(os.path.join(self.data, "manifest.json")) as f:
            m = json.load(f)
        p = m["propagation"]
        load = lambda name: np.load(os.path.join(self.data, name))  # noqa: E731
        hops = {name: load(t["file"]) for name, t in p["row_tables"].items()}
        return hops, load(p["row_nodes"]), load(m["labels"]["file"]).reshape(-1)

    def test_chunks_are_runs_of_rows_read_in_bulk(self):
        hops, row_nodes, labels = self.files()
        names = ["hop_0", "hop_1", "hop_2"]
        for t in TRANSPORTS:
            with self.subTest(transport=t), featstore.connect(self.uris[t]) as c:
                info = c.info()
                self.assertEqual(set(info.row_tables), set(names) | {"hop_node"})
                first, count = info.row_splits["train"]
                seen = np.zeros(len(row_nodes), dtype=bool)
                with c.row_stream("train", batch_size=64, tables=names, order="chunked", chunk=64, seed=3) as s:
                    for sb in s:
                        self.assertEqual(sb.ranges.shape, (1, 2), "one chunk, one run")
                        r0, n = (int(x) for x in sb.ranges[0])
                        self.assertTrue(first <= r0 and r0 + n <= first + count)
                        self.assertFalse(seen[r0:r0 + n].any())
                        seen[r0:r0 + n] = True
                        np.testing.assert_array_equal(sb.seeds, row_nodes[r0:r0 + n])
                        np.testing.assert_array_equal(sb.labels, labels[row_nodes[r0:r0 + n]])
                        for name, got in zip(names, sb.tables):
                            np.testing.assert_array_equal(got.features, hops[name][r0:r0 + n], f"{t} {name}")
                self.assertTrue(seen[first:first + count].all(), "the split's rows, each once")
        print("RESULT python row layout: hop_0..hop_2 of Cora (rows labelled), chunked by row runs, = the files, "
              "over unix:// and grpc://")


class TypedStreamTest(_Served):
    """Typed and link streams (num_neighbors, link) on a typed R-MAT, the
    checks of tests/integration/streams/test_stream_typed.c from the binding's side."""

    @classmethod
    def make_dataset(cls, out_dir):
        return fs_serve.gen_typed_rmat(ARGS.featstore, os.path.join(out_dir, "typed"))

    def setUp(self):
        self.clients = {t: featstore.connect(self.uris[t], timeout_ms=30000) for t in TRANSPORTS}

    def tearDown(self):
        for c in self.clients.values():
            c.close()

    def test_typed_batches_are_the_explicit_hetero_sample(self):
        kw = dict(frontier="all", node_tables=NODE_TABLES, edge_tables=("feat",), edge_ids=True)
        for t in TRANSPORTS:
            c = self.clients[t]
            train = c.split("paper/train")
            with self.subTest(transport=t), c.hetero_stream("paper/train", batch_size=128,
                                                            num_neighbors=NUM_NEIGHBORS, seed=4, epoch=2, **kw) as s:
                self.assertEqual(s.num_batches, (len(train) + 127) // 128)
                seen, edge_rows = [], 0
                for i, sb in enumerate(s):
                    self.assertEqual(sb.index, i)
                    self.assertIsNone(sb.batch)
                    self.assertIsNone(sb.labels)
                    self.assertIsInstance(sb.hetero, featstore.HeteroBatch)
                    hb = sb.hetero
                    np.testing.assert_array_equal(hb.nodes["paper"][hb.seed_local["paper"]], sb.seeds)
                    with c.hetero_sample({"paper": sb.seeds}, NUM_NEIGHBORS, seed=sb.request_seed, **kw) as want:
                        assert_same_hetero(self, want, hb, f"{t} typed batch {i}")
                    self.assertEqual(sorted(hb.x["paper"]), ["feat", "labels"])
                    edge_rows += sum(len(a.get("feat", ())) for a in hb.edge_attr[CITES])
                    seen.append(np.array(sb.seeds))
                self.assertEqual(len(seen), s.num_batches)
                self.assertGreater(edge_rows, 0, "the edge table of cites was gathered")
                order = np.concatenate(seen)
                np.testing.assert_array_equal(np.sort(order), np.sort(train), "one rank's epoch covers paper/train")
        print(f"RESULT python typed stream: every batch of {s.num_batches} is hetero_sample bit for bit (nodes, "
              f"blocks, node and edge tables), the epoch covering paper/train, over unix:// and grpc://")

    def test_link_batches_are_the_explicit_link_sample(self):
        for t in TRANSPORTS:
            c = self.clients[t]
            info = c.info().link_splits["valid"]
            self.assertEqual(info.edge_type, CITES)
            cols = {k: c.split(f"link/valid/{k}") for k in ("src", "dst")}
            cols["label"] = c.split("link/valid/label") if info.labelled else None
            cols["time"] = c.split("link/valid/time") if info.timed else None
            self.assertIsNotNone(cols["time"], "the typed R-MAT's link splits have times")
            negatives = dict(neg="binary", amount=1)
            kw = dict(num_neighbors=NUM_NEIGHBORS, node_tables=NODE_TABLES, temporal="uniform")
            with self.subTest(transport=t), c.link_stream("valid", edge_type=CITES, batch_size=200, **negatives,
                                                          order="sequential", rank=1, world_size=2, time_window=10,
                                                          **kw) as s:
                at = batches = 0
                n_src = len(cols["src"])
                for sb in s:
                    n = sb.num_seeds
                    pos = (2 * np.arange(at, at + n) + 1) % n_src  # sequential, rank 1 of 2: positions 1, 3, 5, ...
                    at += n
                    want_cols = {k: None if v is None else v[pos] for k, v in cols.items()}
                    np.testing.assert_array_equal(sb.seeds, want_cols["src"], "the seeds are the split's src column")
                    self.assertIsNone(sb.batch)
                    self.assertIsNone(sb.labels)
                    with c.link_sample(CITES, want_cols["src"], want_cols["dst"], edge_label=want_cols["label"],
                                       edge_label_time=want_cols["time"], seed=sb.request_seed, time_window=10,
                                       **negatives, **kw) as want:
                        assert_same_hetero(self, want, sb.hetero, f"{t} link batch {sb.index}")
                    self.assertEqual(sb.hetero.link_types, ("paper", "paper"))
                    self.assertEqual(sb.hetero.edge_label_index.shape, (2, 2 * n), "binary negatives, ratio 1")
                    np.testing.assert_array_equal(sb.hetero.edge_label_time[:n], want_cols["time"])
                    batches += 1
                self.assertEqual(batches, s.num_batches)
                self.assertEqual(at, (n_src + 1) // 2)
        with self.clients["unix"].link_stream("valid", edge_type=CITES, batch_size=50, neg="triplet", amount=2,
                                              neg_strict=True, order="sequential", num_neighbors={CITES: [4]},
                                              seed=9) as s:
            sb = next(s)
            c = self.clients["unix"]
            with c.link_sample(CITES, sb.seeds, c.split("link/valid/dst")[:50],
                               edge_label_time=c.split("link/valid/time")[:50], neg="triplet", amount=2,
                               neg_strict=True, num_neighbors={CITES: [4]}, seed=sb.request_seed) as want:
                assert_same_hetero(self, want, sb.hetero, "triplet link batch 0")
            self.assertEqual(sb.hetero.dst_neg_index.shape, (50, 2))
        print(f"RESULT python link stream: rank 1 of 2, {batches} batches of the link split 'valid' in order, each "
              f"link_sample bit for bit with its times, over unix:// and grpc://")

    def test_hetero_views_end_with_their_stream_batch(self):
        c = self.clients["unix"]
        with c.hetero_stream("paper/train", batch_size=64, num_neighbors=NUM_NEIGHBORS, node_tables=("feat",),
                             seed=1) as s:
            sb = next(s)
            hb = sb.hetero
            x, nodes = hb.x["paper"]["feat"], hb.nodes["paper"]
            want = np.array(x)
            base, length = sb.region()
            self.assertEqual(hb.region(), (base, length))
            for a in (x, nodes, hb.blocks[CITES][0].edge_src):  # (seeds: the stream batch's own array)
                self.assertTrue(base <= a.ctypes.data and a.ctypes.data + a.nbytes <= base + length,
                                "an array outside the stream batch's memory")
            self.assertFalse(x.flags.writeable or x.flags.owndata)
            if importlib.util.find_spec("torch") is not None:
                self.assertEqual(hb.torch().x["paper"]["feat"].data_ptr(), x.ctypes.data, "torch copied the rows")
            self.assertIn("hetero", repr(sb))
            sb.release()
            self.assertRaises(featstore.BatchReleasedError, getattr, sb, "hetero")
            for what in ("nodes", "x", "blocks"):
                with self.assertRaisesRegex(featstore.BatchReleasedError, f"batch released: {what} "):
                    getattr(hb, what)  # the view ended with its StreamBatch
            self.assertEqual(s.held_batches, 1, "kept by its arrays")
            np.testing.assert_array_equal(x, want, "an array kept past release keeps its data")
            del x, nodes, a
            gc.collect()
            self.assertEqual(s.held_batches, 0, "the stream batch freed once, by its own handle")
            for sb in s:  # the rest of the epoch, batches dropped as the loop goes
                self.assertGreaterEqual(len(sb.hetero.nodes["paper"]), sb.num_seeds)
        ids = c.split("paper/valid")[:37]
        with c.hetero_stream(ids, seed_type="paper", batch_size=10, order="sequential",
                             num_neighbors={CITES: [2]}) as s:  # explicit seeds, of a given type
            got = [np.array(sb.seeds) for sb in s]
        np.testing.assert_array_equal(np.concatenate(got), ids)

    def test_the_deprecated_stream_opens_the_same_streams(self):
        """Client.stream (deprecated) with num_neighbors, and with link as a
        dict or a StreamLink: the batches of hetero_stream and link_stream;
        typed_stream, hetero_stream's 1.5 name: the same batches."""
        c = self.clients["unix"]
        typed = dict(batch_size=64, num_neighbors=NUM_NEIGHBORS, node_tables=NODE_TABLES, seed=2)
        link = dict(batch_size=50, num_neighbors={CITES: [4]}, order="sequential", seed=9)
        pairs = [(lambda: c.stream(split="paper/train", **typed), lambda: c.hetero_stream("paper/train", **typed),
                  "Client.hetero_stream"),
                 (lambda: c.typed_stream("paper/train", **typed), lambda: c.hetero_stream("paper/train", **typed),
                  "Client.hetero_stream"),
                 (lambda: c.stream(split="valid", link=dict(edge_type=CITES, neg="triplet", amount=2, strict=True),
                                   **link),
                  lambda: c.link_stream("valid", edge_type=CITES, neg="triplet", amount=2, neg_strict=True, **link),
                  "Client.link_stream"),
                 (lambda: c.stream(split="valid", link=featstore.StreamLink(CITES, neg="binary"), **link),
                  lambda: c.link_stream("valid", edge_type=CITES, neg="binary", **link), "Client.link_stream")]
        for old, new, replacement in pairs:
            with self.subTest(replacement=replacement):
                with self.assertWarnsRegex(DeprecationWarning, replacement):
                    s = old()
                with s, new() as t:
                    for i in range(2):
                        a, b = next(s), next(t)
                        assert_same_hetero(self, a.hetero, b.hetero, f"{replacement} batch {i}")
                        a.release(), b.release()

    def test_old_argument_names_warn_and_mean_the_same(self):
        """hetero_sample's and link_sample's arguments renamed in 1.5 still
        work under their old names, each with a DeprecationWarning naming
        the new one."""
        c = self.clients["unix"]
        ids = c.split("paper/train")[:20]
        kw = dict(seed=3, node_tables=NODE_TABLES)
        with c.hetero_sample({"paper": ids}, NUM_NEIGHBORS, edge_ids=True, **kw) as want:
            with self.assertWarnsRegex(DeprecationWarning, r"hetero_sample\(want_edge_ids=...\) is deprecated: "
                                                           r"call it with edge_ids="):
                got = c.hetero_sample({"paper": ids}, NUM_NEIGHBORS, want_edge_ids=True, **kw)
            with got:
                assert_same_hetero(self, want, got, "want_edge_ids=")
        src, dst, time = (c.split(f"link/valid/{k}")[:20] for k in ("src", "dst", "time"))
        new = dict(edge_label_time=time, neg_strict=True, time_window=10, time_strict=True)
        old = dict(time=time, strict=True, window=10, time_strict=True)
        link = dict(num_neighbors={CITES: [3]}, neg="binary", temporal="uniform", seed=5)
        with c.link_sample(CITES, src, dst, **new, **link) as want:
            with self.assertWarns(DeprecationWarning) as w:
                got = c.link_sample(CITES, src, dst, **old, **link)
            said = " ".join(str(x.message) for x in w.warnings)
            for name, replacement in (("time", "edge_label_time"), ("strict", "neg_strict"),
                                      ("window", "time_window")):
                self.assertIn(f"link_sample({name}=...) is deprecated: call it with {replacement}=", said)
            with got:
                assert_same_hetero(self, want, got, "link_sample's old names")
        with self.assertRaisesRegex(TypeError, "both window= and time_window="):
            c.hetero_sample({"paper": ids}, NUM_NEIGHBORS, window=1, time_window=1)

    def test_bad_typed_options_are_named(self):
        self.enterContext(warnings.catch_warnings())  # the refusals of the deprecated Client.stream, kept
        warnings.simplefilter("ignore", DeprecationWarning)
        bad_type = {("nosuch", "cites", "paper"): [5, 3]}
        link = {"edge_type": CITES}
        cases = [  # (arguments, status, what the C message says)
            (dict(split="paper/train", num_neighbors=bad_type), "INVALID_ARGUMENT", "nosuch"),
            (dict(split="paper/train", num_neighbors=NUM_NEIGHBORS, labels="labels"), "INVALID_ARGUMENT",
             "labels applies to node and row streams only; this is a hetero stream"),
            (dict(split="valid", link=link), "INVALID_ARGUMENT", "needs hetero"),
            (dict(split="nosuch", link=link, num_neighbors=NUM_NEIGHBORS), "NOT_FOUND", "nosuch"),
            (dict(split="paper/train", num_neighbors=NUM_NEIGHBORS, seed_type="nosuch"), "INVALID_ARGUMENT", "nosuch"),
            (dict(seeds=[1, 2], num_neighbors=NUM_NEIGHBORS), "INVALID_ARGUMENT", "give seed_type"),
            (dict(seeds=[1, 2], link=link, num_neighbors=NUM_NEIGHBORS), "INVALID_ARGUMENT", "give its name as split"),
            (dict(split="paper/train", fanouts=[5]), "INVALID_ARGUMENT", "heterogeneous graph"),
            (dict(split="paper/train", num_neighbors={CITES: [5]}, node_tables=("nosuch",)), "NOT_FOUND", "nosuch"),
        ]
        for t in TRANSPORTS:
            for kw, status, says in cases:
                with self.subTest(transport=t, args=kw):
                    with self.assertRaises(featstore.Error) as e:
                        self.clients[t].stream(batch_size=16, **kw)
                    self.assertEqual(e.exception.status, featstore.Status[status], e.exception.message)
                    self.assertIn(says, e.exception.message)
        c = self.clients["unix"]
        typed = dict(split="paper/train", batch_size=16, num_neighbors=NUM_NEIGHBORS)
        for kw, says in ((dict(fanouts=[5]), "fanouts: not for a hetero stream"),
                         (dict(table="feat", delta="full"), "table, delta: not for a hetero stream"),
                         (dict(window=4), "window: not for a hetero stream"),
                         (dict(edge_ids=True), "edge_ids: not for a hetero stream.*want_edge_ids")):
            with self.subTest(args=kw):
                self.assertRaisesRegex(ValueError, says, c.stream, **typed, **kw)
        self.assertRaisesRegex(ValueError, "frontier, node_tables: options of hetero streams: give num_neighbors",
                               c.stream, split="paper/train", batch_size=16, fanouts=[5], frontier="all",
                               node_tables=("feat",))
        self.assertRaisesRegex(ValueError, "fanouts: a node stream needs one fanout per hop", c.stream,
                               split="paper/train", batch_size=16)
        self.assertRaisesRegex(TypeError, "link: unknown key\\(s\\) 'negative'", c.stream, split="valid",
                               batch_size=16, num_neighbors=NUM_NEIGHBORS, link={"edge_type": CITES, "negative": 1})
        self.assertRaisesRegex(TypeError, "edge type .* must be a \\(src, rel, dst\\)", c.stream, split="valid",
                               batch_size=16, num_neighbors=NUM_NEIGHBORS, link={"edge_type": "cites"})
        self.assertRaisesRegex(ValueError, "neg 'both'", c.stream, split="valid", batch_size=16,
                               num_neighbors=NUM_NEIGHBORS, link=featstore.StreamLink(CITES, neg="both"))
        self.assertRaisesRegex(ValueError, "num_neighbors", c.stream, split="paper/train", batch_size=16,
                               num_neighbors={})


def main():
    global ARGS, featstore, np
    ARGS, rest = fs_serve.client_test_args(__doc__.split("\n")[0])
    import numpy as np
    import featstore
    fs_serve.run_tests("test_python_stream_kinds", rest)


if __name__ == "__main__":
    main()
else:  # collected by pytest (tests/conftest.py): the build the environment names
    ARGS = fs_serve.pytest_args()
    import numpy as np
    import featstore
