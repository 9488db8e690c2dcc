#!/usr/bin/python3
"""test_python_stream.py — epoch streams from Python (``Client.node_stream``,
``typed_stream``, ``link_stream``, ``row_stream``, the deprecated
``Client.stream``; ``featstore.Stream``, ``StreamBatch``, ``EpochPlan``:
client-lib/python/featstore/stream.py, _stream_calls.py, plan.py) against a
real `featstore serve`, the checks of tests/test_stream.c from the binding's
side.

The module fixture imports Cora (tests/data/cora.npz, symmetrised, the
importer's seeded 60/20/20 split: 1624 training nodes, tables "feat" and
"labels") and starts one server on a Unix socket and an ephemeral gRPC port
(tests/fs_serve.py). Over both transports: every stream batch is the
explicit ``sample_gather(batch.seeds, ..., seed=batch.request_seed)`` bit
for bit (nodes, seed ids, every block with its edge ids, features) and its
labels the ``gather(batch.seeds, "labels")``; the iterator yields
num_batches batches and stops, its position advancing; DDP shares for world
sizes 1 to 4 are equal, disjoint with drop_last and covering the split
without; a stream reopened at an earlier position gives the remaining
batches bit for bit, and so does a new process reopening it from a cursor
checkpointed to a file; bad arguments raise featstore.Error with the C status
and a message naming the problem (ValueError for an unknown order), through
the deprecated Client.stream as through node_stream, where another kind's
option is a TypeError naming it; Client.stream warns naming its replacement;
featstore.EpochPlan (the C plan) deals the stream's batches, positions and
request seeds for six (seed, epoch, rank, world, order, drop_last), and
Client.default_prefetch is the prefetch a stream takes by default;
sample_gather(fanouts=) still works, deprecated. Over
unix:// also: the hold limit and the lifetime rule (released batches raise,
arrays kept past release keep their data and count against the hold),
prefetching, explicit seeds in sequential order without labels, streams
outliving close() of their Client and garbage collection, and a forked
child refused by name.

Typed and link streams (``num_neighbors=``, ``link=``), the checks of
tests/test_stream_typed.c: TypedStreamTest starts its own server on a typed
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

    /usr/bin/python3 tests/test_python_stream.py --featstore BUILD/cli/featstore --lib BUILD/client-lib/libfeatstore.so

Exits 77 (ctest's skip) when numpy is missing.
"""
import argparse
import gc
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest
import warnings

import fs_serve

SKIP = 77
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
ARGS = None  # parsed in main()
SERVER = {}  # the module fixture: proc, dir, unix, grpc
np = featstore = None  # imported by main(), once the skip check passed

FANOUTS = [10, 5]
TRANSPORTS = ("unix", "grpc")

# The new process of test_a_checkpointed_cursor_resumes_in_a_new_process:
# reads DIR/cursor.json, reopens the stream there and saves each batch it
# takes as DIR/batch-NNNNNN.npz.
RESUME_CHILD = r'''
import json, os, sys
import numpy as np
import featstore
out = sys.argv[1]
with open(os.path.join(out, "cursor.json")) as f:
    cursor = json.load(f)
uri = cursor.pop("uri")
with featstore.connect(uri, timeout_ms=30000) as c, c.node_stream(**cursor) as s:
    for sb in s:
        np.savez(os.path.join(out, "batch-%06d.npz" % sb.index), index=sb.index, request_seed=sb.request_seed,
                 seeds=np.array(sb.seeds), labels=np.array(sb.labels), nodes=np.array(sb.batch.nodes),
                 features=np.array(sb.batch.features))
        sb.release()
'''


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--featstore", required=True, help="the featstore CLI")
    p.add_argument("--lib", required=True, help="libfeatstore.so")
    args, rest = p.parse_known_args()
    return args, rest


def require_modules():
    if importlib.util.find_spec("numpy") is None:
        print(f"SKIP: {sys.executable} has no numpy (apt-get install python3-numpy)")
        sys.exit(SKIP)


# ---- the server fixture ----------------------------------------------------------

def setUpModule():
    tmp = tempfile.mkdtemp(prefix="featstore-pystream-")
    SERVER["dir"] = tmp
    dataset = fs_serve.import_cora(ARGS.featstore, os.path.join(tmp, "cora"))
    proc, ready = fs_serve.start(ARGS.featstore, dataset, os.path.join(tmp, "s.sock"))
    SERVER.update(proc=proc, unix="unix://" + ready["unix"], grpc="grpc://" + ready["grpc"], dataset=dataset)


def tearDownModule():
    try:
        if "proc" in SERVER:
            status = fs_serve.stop(SERVER["proc"])
            if status != 0:
                raise AssertionError(f"featstore serve exited {status} on SIGTERM, expected 0")
    finally:
        shutil.rmtree(SERVER.get("dir", ""), ignore_errors=True)


# ---- helpers ----------------------------------------------------------------------

def batch_arrays(b):
    """A Batch's arrays by name, copied: nodes, seed_local, every block's and the features."""
    out = {"nodes": np.array(b.nodes), "seed_local": np.array(b.seed_local)}
    for h, blk in enumerate(b.blocks):
        for f in ("dst_offsets", "edge_dst", "edge_src", "edge_ids"):
            value = getattr(blk, f)
            out[f"blocks[{h}].{f}"] = None if value is None else np.array(value)
    out["features"] = None if b.features is None else np.array(b.features)
    return out


def assert_same_arrays(test, want, got, what):
    test.assertEqual(sorted(want), sorted(got), what)
    for name, a in want.items():
        b = got[name]
        if a is None or b is None:
            test.assertIs(a, b, f"{what}: {name}")
            continue
        test.assertEqual((a.dtype, a.shape), (b.dtype, b.shape), f"{what}: {name}")
        test.assertEqual(a.tobytes(), b.tobytes(), f"{what}: {name} differs")  # bit for bit


def snapshot(sb):
    """A StreamBatch as copies: (index, request seed, seeds, labels, its Batch's arrays)."""
    labels = None if sb.labels is None else np.array(sb.labels)
    return sb.index, sb.request_seed, np.array(sb.seeds), labels, batch_arrays(sb.batch)


def wait_until(predicate, seconds=10):
    deadline = time.monotonic() + seconds
    while not predicate():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


# ---- the tests ------------------------------------------------------------------

class StreamTest(unittest.TestCase):
    def setUp(self):
        self.clients = {t: featstore.connect(SERVER[t], timeout_ms=30000) for t in TRANSPORTS}
        self.train = self.clients["unix"].split("train")

    def tearDown(self):
        for c in self.clients.values():
            c.close()

    def stream(self, transport, **kw):
        """Client.node_stream of the split "train" (or kw's seeds)."""
        args = dict(seeds="train", batch_size=100, num_neighbors=FANOUTS, table="feat", seed=5, epoch=1)
        args.update(kw)
        return self.clients[transport].node_stream(**args)

    def old_stream(self, transport, **kw):
        """The same through Client.stream, deprecated since 1.6 (its 1.4 names)."""
        args = dict(split="train", batch_size=100, fanouts=FANOUTS, table="feat", seed=5, epoch=1)
        args.update(kw)
        with self.assertWarnsRegex(DeprecationWarning, "Client.stream.* is deprecated: use Client.node_stream"):
            return self.clients[transport].stream(**args)

    def test_every_batch_is_the_explicit_sample_gather_and_its_labels(self):
        for t in TRANSPORTS:
            c = self.clients[t]
            with self.subTest(transport=t), self.stream(t, edge_ids=True) as s:
                self.assertEqual(s.num_batches, (len(self.train) + 99) // 100)
                self.assertEqual(s.position, 0)
                seen = []
                for i, sb in enumerate(s):
                    self.assertEqual((sb.index, s.position), (i, i + 1))
                    self.assertEqual(sb.batch.kind, "sample_gather")
                    with c.sample_gather(sb.seeds, FANOUTS, "feat", seed=sb.request_seed, edge_ids=True) as want, \
                            c.gather(sb.seeds, "labels") as labels:
                        assert_same_arrays(self, batch_arrays(want), batch_arrays(sb.batch), f"{t} batch {i}")
                        np.testing.assert_array_equal(sb.labels, labels.features[:, 0])
                    seen.append(np.array(sb.seeds))
                self.assertEqual(len(seen), s.num_batches)
                self.assertEqual(s.position, s.num_batches)
                self.assertRaises(StopIteration, next, s)  # and stays at the end
                order = np.concatenate(seen)
                np.testing.assert_array_equal(np.sort(order), np.sort(self.train), "one rank: the whole split")
                self.assertFalse(np.array_equal(order, self.train), "random order: shuffled")
        print(f"RESULT python stream: every batch of {s.num_batches} is sample_gather + gather(labels) bit for bit, "
              f"over unix:// and grpc://")

    def test_the_plan_depends_on_seed_and_epoch_only(self):
        def order(t, **kw):
            with self.stream(t, table=None, labels="", **kw) as s:
                return np.concatenate([np.array(sb.seeds) for sb in s])
        first = order("unix", seed=5, epoch=1)
        np.testing.assert_array_equal(order("grpc", seed=5, epoch=1), first)
        self.assertFalse(np.array_equal(order("unix", seed=5, epoch=2), first), "a new epoch reshuffles")
        self.assertFalse(np.array_equal(order("unix", seed=6, epoch=1), first), "another seed reshuffles")
        np.testing.assert_array_equal(order("unix", order="sequential"), self.train)
        chunked = order("unix", order="chunked", chunk=50)
        np.testing.assert_array_equal(np.sort(chunked), np.sort(self.train))
        where = {int(v): i for i, v in enumerate(self.train)}
        pos = np.array([where[int(v)] for v in chunked])  # runs of 50 consecutive seeds of the split, shuffled
        breaks = np.flatnonzero(np.diff(pos) != 1) + 1
        self.assertTrue(np.all(pos[np.r_[0, breaks]] % 50 == 0), "a run starting inside a chunk")
        self.assertGreater(len(breaks), 10, "the chunks were shuffled")

    def test_ddp_shares_are_equal_and_disjoint_or_covering(self):
        n = len(self.train)
        for t in TRANSPORTS:
            for world in (1, 2, 3, 4):
                for drop_last in (False, True):
                    with self.subTest(transport=t, world=world, drop_last=drop_last):
                        shares, counts = [], set()
                        for rank in range(world):
                            with self.stream(t, batch_size=64, table=None, labels="", rank=rank, world_size=world,
                                             drop_last=drop_last) as s:
                                seeds = [np.array(sb.seeds) for sb in s]
                                self.assertEqual(len(seeds), s.num_batches)
                                counts.add(s.num_batches)
                                shares.append(np.concatenate(seeds))
                        self.assertEqual(len(counts), 1, "every rank the same number of batches")
                        self.assertEqual(len({len(sh) for sh in shares}), 1, "equal shares")
                        every = np.concatenate(shares)
                        self.assertTrue(np.isin(every, self.train).all(), "seeds from the split only")
                        if drop_last:
                            per_rank = n // world // 64 * 64
                            self.assertEqual(len(shares[0]), per_rank)
                            self.assertEqual(len(np.unique(every)), len(every), "disjoint shares")
                        else:
                            self.assertEqual(len(shares[0]), -(-n // world))
                            np.testing.assert_array_equal(np.unique(every), np.unique(self.train), "cover the split")
        print("RESULT python stream DDP: world sizes 1-4, drop_last both ways, equal shares, disjoint or covering, "
              "over unix:// and grpc://")

    def test_reopened_at_its_position_it_continues_bit_for_bit(self):
        for t in TRANSPORTS:
            with self.subTest(transport=t):
                with self.stream(t) as s:
                    whole = [snapshot(sb) for sb in s]
                with self.stream(t) as s:
                    for _ in range(5):
                        next(s).release()
                    cursor = s.position  # a checkpoint
                self.assertEqual(cursor, 5)
                self.assertEqual(s.position, 5, "closed: where it stopped")
                with self.stream(t, start_batch=cursor) as s:
                    self.assertEqual(s.num_batches, len(whole))
                    rest = [snapshot(sb) for sb in s]
                self.assertEqual(len(rest), len(whole) - cursor)
                for want, got in zip(whole[cursor:], rest):
                    self.assertEqual(want[:2], got[:2], "index and request seed")
                    np.testing.assert_array_equal(want[2], got[2])
                    np.testing.assert_array_equal(want[3], got[3])
                    assert_same_arrays(self, want[4], got[4], f"{t} batch {want[0]}")

    def test_a_checkpointed_cursor_resumes_in_a_new_process(self):
        # A trainer checkpoints its stream's cursor (the options and the
        # position) to a file and dies; a new process reads the file and
        # continues the epoch. Its batches, written back as .npz files, must
        # be the uninterrupted epoch's.
        opts = dict(seeds="train", batch_size=100, num_neighbors=FANOUTS, table="feat", seed=7, epoch=3, rank=1,
                    world_size=2)
        for t in TRANSPORTS:
            with self.subTest(transport=t):
                with self.clients[t].node_stream(**opts) as s:
                    whole = [snapshot(sb) for sb in s]
                with self.clients[t].node_stream(**opts) as s:
                    for _ in range(3):
                        next(s).release()
                    cursor = dict(opts, uri=SERVER[t], start_batch=s.position)
                out = tempfile.mkdtemp(prefix="featstore-resume-", dir=SERVER["dir"])
                with open(os.path.join(out, "cursor.json"), "w") as f:
                    json.dump(cursor, f)
                env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "client-lib", "python"))
                done = subprocess.run([sys.executable, "-c", RESUME_CHILD, out], env=env, capture_output=True,
                                      text=True, timeout=120)
                self.assertEqual(done.returncode, 0, done.stderr)
                rest = sorted(f for f in os.listdir(out) if f.endswith(".npz"))
                self.assertEqual(len(rest), len(whole) - 3, "the new process takes the epoch's remaining batches")
                for want, name in zip(whole[3:], rest):
                    got = np.load(os.path.join(out, name))
                    self.assertEqual(int(got["index"]), want[0])
                    self.assertEqual(int(got["request_seed"]), want[1])
                    np.testing.assert_array_equal(want[2], got["seeds"])
                    np.testing.assert_array_equal(want[3], got["labels"])
                    for key in ("nodes", "features"):
                        self.assertEqual(want[4][key].tobytes(), got[key].tobytes(), f"{t} batch {want[0]}: {key}")
        print("RESULT python stream resume: a cursor checkpointed to a file continues in a new process, bit for bit, "
              "over unix:// and grpc://")

    def test_delta_batches_reassemble_to_the_explicit_features(self):
        for t in TRANSPORTS:
            c = self.clients[t]
            for delta, window in (("full", 4), ("only", 1)):
                with self.subTest(transport=t, delta=delta), self.stream(t, delta=delta, reorder_window=window) as s:
                    prev, reused, plans = None, 0, []
                    for sb in s:
                        plans.append(sb.plan_index)
                        self.assertEqual(sb.plan_index // window, sb.index // window, "reordered in its window")
                        with c.sample_gather(sb.seeds, FANOUTS, "feat", seed=sb.request_seed) as want:
                            np.testing.assert_array_equal(sb.batch.nodes, want.nodes)
                            base = prev if prev is not None else np.zeros((0, want.features.shape[1]), np.float32)
                            self.assertEqual(sb.prev_rows, len(base))
                            full = np.concatenate([base, sb.new_rows])[sb.take]
                            np.testing.assert_array_equal(full, want.features, f"{t} batch {sb.index}")
                            if delta == "full":
                                np.testing.assert_array_equal(sb.features, want.features)
                            else:
                                self.assertIsNone(sb.features)
                            n = len(want.nodes)
                            self.assertAlmostEqual(sb.match, (n - len(sb.new_rows)) / n)
                            reused += n - len(sb.new_rows)
                            prev = np.array(want.features)
                    self.assertEqual(sorted(plans), list(range(s.num_batches)), "every plan batch once")
                    self.assertGreater(reused, 0, "consecutive batches share rows")
        print("RESULT python stream delta: full (window 4) and only (window 1) reassemble bit for bit, "
              "over unix:// and grpc://")

    def test_bad_arguments_are_named(self):
        cases = [  # (arguments, status, what the message says)
            (dict(rank=2, world_size=2), "INVALID_ARGUMENT", "rank 2 with world size 2"),
            (dict(split="nosuch"), "NOT_FOUND", "nosuch"),
            (dict(table="nosuch"), "NOT_FOUND", "has no feature table 'nosuch'; its feature tables: feat, labels"),
            (dict(batch_size=0), "INVALID_ARGUMENT", "batch size 0"),
            (dict(labels="nolabels"), "NOT_FOUND", "labels: dataset"),
            (dict(seeds=[1, 2, 3]), "INVALID_ARGUMENT", "not both"),
            (dict(split=None), "INVALID_ARGUMENT", "not neither"),
            (dict(prefetch=17), "INVALID_ARGUMENT", "prefetch 17"),
            (dict(hold=0, prefetch=0, start_batch=99), "INVALID_ARGUMENT", "start_batch 99"),
            (dict(delta="full", window=17), "INVALID_ARGUMENT", "a window of 17 batches"),
            (dict(delta="full", window=-1), "INVALID_ARGUMENT", "a window of -1 batches"),
        ]
        for t in TRANSPORTS:
            for kw, status, says in cases:
                with self.subTest(transport=t, args=kw):
                    with self.assertRaises(featstore.Error) as e:
                        self.old_stream(t, **kw)
                    self.assertEqual(e.exception.status, featstore.Status[status])
                    self.assertIn(says, e.exception.message)
            with self.assertRaisesRegex(ValueError, "unknown stream order 'shuffled'.*random, sequential, chunked"):
                self.old_stream(t, order="shuffled")
        with self.assertRaisesRegex(ValueError, "fanouts"):
            self.old_stream("unix", fanouts=[])
        with self.assertRaisesRegex(TypeError, "seeds must be integers"):
            self.old_stream("unix", split=None, seeds=[1.5])
        with self.assertRaisesRegex(TypeError, "labels"):
            self.old_stream("unix", labels=3)
        with self.assertRaisesRegex(ValueError, "seed -1"):
            self.old_stream("unix", seed=-1)
        with self.assertRaisesRegex(ValueError, "window 0"):
            self.old_stream("unix", delta="full", window=0)
        closed = featstore.connect(SERVER["unix"])
        closed.close()
        with self.assertWarns(DeprecationWarning):
            self.assertRaisesRegex(ValueError, "closed", closed.stream, split="train", batch_size=10, fanouts=[2])

    def test_node_stream_refuses_bad_arguments_by_name(self):
        """The per-kind constructor: the same refusals, and another kind's
        option is Python's TypeError naming it."""
        for kw, status, says in [(dict(rank=2, world_size=2), "INVALID_ARGUMENT", "rank 2 with world size 2"),
                                 (dict(seeds="nosuch"), "NOT_FOUND", "nosuch"),
                                 (dict(batch_size=0), "INVALID_ARGUMENT", "batch size 0"),
                                 (dict(reorder_window=4), "INVALID_ARGUMENT", "it needs a delta mode"),
                                 (dict(delta="full", table=None), "INVALID_ARGUMENT", "give a table")]:
            with self.subTest(args=kw):
                with self.assertRaises(featstore.Error) as e:
                    self.stream("unix", **kw)
                self.assertEqual(e.exception.status, featstore.Status[status])
                self.assertIn(says, e.exception.message)
        for other in ("node_tables", "tables", "link", "fanouts", "split", "window", "temporal"):
            with self.subTest(option=other), self.assertRaisesRegex(TypeError, f"unexpected keyword argument '{other}'"):
                self.stream("unix", **{other: None})
        self.assertRaisesRegex(TypeError, "seeds must be integers", self.stream, "unix", seeds=[1.5])
        self.assertRaisesRegex(ValueError, "window 0", self.stream, "unix", delta="full", reorder_window=0)
        with self.assertRaisesRegex(ValueError, "tables must be a non-empty list"):
            self.clients["unix"].row_stream("train", tables=[], batch_size=10)

    def test_sample_takes_fanouts_under_its_old_name(self):
        c = self.clients["unix"]
        with c.sample_gather(self.train[:50], FANOUTS, "feat", seed=4) as want:
            with self.assertWarnsRegex(DeprecationWarning, r"sample_gather\(fanouts=...\) is deprecated: call it "
                                                           r"with num_neighbors="):
                got = c.sample_gather(self.train[:50], fanouts=FANOUTS, table="feat", seed=4)
            with got:
                assert_same_arrays(self, batch_arrays(want), batch_arrays(got), "sample_gather(fanouts=)")
        with self.assertWarns(DeprecationWarning), c.sample(self.train[:50], fanouts=FANOUTS, seed=4) as got:
            self.assertEqual(got.num_hops, len(FANOUTS))

    def test_client_stream_is_deprecated_naming_its_replacement(self):
        c = self.clients["unix"]
        cases = [(dict(fanouts=FANOUTS), "Client.node_stream"), (dict(tables=["feat"]), "Client.row_stream")]
        for kw, replacement in cases:
            with self.subTest(replacement=replacement):
                with self.assertWarnsRegex(DeprecationWarning, replacement) as w:
                    s = c.stream(split="train", batch_size=100, **kw)
                self.assertEqual(os.path.basename(w.filename), os.path.basename(__file__), "points at the caller")
                with s:
                    self.assertEqual(next(s).index, 0)

    def test_a_plan_deals_what_the_stream_deals(self):
        """featstore.EpochPlan (the C library's fs_stream_plan_*) equals the
        stream's plan for several (seed, epoch, rank, world, order,
        drop_last): the same batches of the same positions in the seed list,
        with the same request seeds."""
        n = len(self.train)
        for k, (seed, epoch, rank, world) in enumerate([(0, 0, 0, 1), (5, 1, 0, 2), (5, 1, 1, 2), (7, 3, 2, 3),
                                                        (2**63 + 11, 9, 1, 4), (42, 0, 3, 4)]):
            order, drop_last = ("random", "sequential", "chunked")[k % 3], bool(k % 2)
            with self.subTest(seed=seed, epoch=epoch, rank=rank, world=world, order=order, drop_last=drop_last):
                kw = dict(seed=seed, epoch=epoch, rank=rank, world_size=world, order=order, drop_last=drop_last,
                          chunk=32 if order == "chunked" else 0)
                plan = featstore.EpochPlan(n, 64, **kw)
                with self.stream("unix", batch_size=64, table=None, labels="", **kw) as s:
                    self.assertEqual(len(plan), s.num_batches)
                    for i, sb in enumerate(s):
                        positions, request_seed = plan.positions(i), plan.request_seed(i)
                        np.testing.assert_array_equal(positions, sb.positions, f"batch {i}")
                        np.testing.assert_array_equal(self.train[positions], sb.seeds)
                        self.assertEqual(request_seed, sb.request_seed)
                    self.assertEqual(i + 1, len(plan))
        self.assertEqual([len(p) for p, _ in featstore.EpochPlan(10, 4, order="sequential")], [4, 4, 2])
        with self.assertRaises(featstore.Error) as e:
            featstore.EpochPlan(10, 4, rank=2, world_size=2)
        self.assertEqual(e.exception.status, featstore.Status.INVALID_ARGUMENT)
        self.assertIn("rank 2 with world size 2", e.exception.message)
        self.assertRaisesRegex(ValueError, "unknown stream order 'shuffled'", featstore.EpochPlan, 10, 4,
                               order="shuffled")
        self.assertRaises(IndexError, featstore.EpochPlan(10, 4).positions, 3)

    def test_the_default_prefetch_is_the_streams(self):
        """Client.default_prefetch is the C library's choice for prefetch=0:
        two batches per producer (over unix:// one producer per thread),
        and a stream opened with prefetch=0 makes exactly that many ahead."""
        for threads, want in ((1, 2), (2, 4), (3, 6), (12, 16)):
            with featstore.connect(SERVER["unix"], threads=threads) as c:
                self.assertEqual(c.default_prefetch(), want, f"threads={threads}")
                self.assertEqual(c.default_prefetch(producers=1), 2)
        self.assertEqual(self.clients["grpc"].default_prefetch(), 2, "grpc://: one producer")
        with featstore.connect(SERVER["unix"], threads=2) as c, c.node_stream(
                "train", batch_size=20, num_neighbors=FANOUTS, table="feat") as s:
            self.assertTrue(wait_until(lambda: s.ready == 4), f"ready {s.ready}, want 4")
            time.sleep(0.2)
            self.assertEqual(s.ready, 4, "no more than the default made ahead")

    def test_hold_and_the_lifetime_rule(self):
        with self.stream("unix", hold=2) as s:
            a, b = next(s), next(s)
            self.assertEqual(s.held_batches, 2)
            with self.assertRaises(featstore.Error) as e:
                next(s)
            self.assertEqual(e.exception.status, featstore.Status.RESOURCE)
            self.assertIn("hold = 2", e.exception.message)
            inner, seeds, want = a.batch, a.seeds, np.array(a.seeds)
            a.release()
            for what in ("seeds", "labels", "batch", "index", "request_seed"):
                with self.assertRaisesRegex(featstore.BatchReleasedError, f"batch released: {what} "):
                    getattr(a, what)
            self.assertRaises(featstore.BatchReleasedError, getattr, inner, "features")  # its Batch ends with it
            self.assertRaises(featstore.BatchReleasedError, a.region)
            # an array kept past release() keeps its data, and its batch counts against the hold: the error says so
            self.assertEqual(s.held_batches, 2)
            with self.assertRaises(featstore.Error) as e:
                next(s)
            self.assertIn("1 of the 2 held by released batches whose arrays are still alive", e.exception.message)
            np.testing.assert_array_equal(seeds, want)
            del seeds, inner
            self.assertEqual(s.held_batches, 1, "the last array gone, the batch is freed")
            c = next(s)
            self.assertEqual(c.index, 2)
            with c:
                x = c.batch.features
                base, length = c.region()
                self.assertTrue(base <= x.ctypes.data and x.ctypes.data + x.nbytes <= base + length,
                                "the features are a view of the batch's memory")
                self.assertFalse(x.flags.writeable or x.flags.owndata)
            self.assertTrue(c.released)
            b.release()
            self.assertEqual(s.held_batches, 1, "c, through its features")
            next(s).release()
            del x
            self.assertEqual(s.held_batches, 0)

    def test_prefetch_fills_ahead(self):
        with self.stream("unix", prefetch=3) as s:
            self.assertTrue(wait_until(lambda: s.ready == 3), f"ready {s.ready}, want 3")
            time.sleep(0.2)
            self.assertEqual(s.ready, 3, "no more than prefetch made ahead")
            next(s).release()
            self.assertTrue(wait_until(lambda: s.ready == 3))
        self.assertEqual(s.ready, 0)

    def test_producers_make_the_same_batches_in_order_with_their_positions(self):
        def epoch(**kw):
            with self.stream("unix", **kw) as s:
                return [(np.array(sb.seeds), np.array(sb.positions), np.array(sb.batch.nodes),
                         np.array(sb.batch.features), np.array(sb.labels)) for sb in s]
        one, three = epoch(producers=1), epoch(producers=3, prefetch=3)
        self.assertEqual(len(one), len(three))
        for i, (a, b) in enumerate(zip(one, three)):
            for x, y in zip(a, b):
                np.testing.assert_array_equal(x, y, f"batch {i}")
            np.testing.assert_array_equal(self.train[a[1]], a[0], "positions place the seeds in the split")
        with self.assertRaises(featstore.Error) as err:
            self.stream("unix", producers=17)
        self.assertIn("17 producers", str(err.exception))

    def test_explicit_seeds_in_order_without_labels(self):
        seeds = np.array([(i * 53) % 2708 for i in range(37)], dtype=np.int64)
        with self.stream("unix", seeds=seeds, batch_size=10, order="sequential", labels="") as s:
            seeds_given = seeds.copy()
            seeds[0] = 7  # the stream copied them
            got = []
            for sb in s:
                self.assertIsNone(sb.labels)
                got.append(np.array(sb.seeds))
        np.testing.assert_array_equal(np.concatenate(got), seeds_given)
        with self.stream("unix", table=None, batch_size=50) as s:  # sampling only
            sb = next(s)
            self.assertEqual(sb.batch.kind, "sample")
            self.assertIsNone(sb.batch.features)
            self.assertEqual(len(sb.labels), 50, "the dataset's labels by default")

    def test_streams_outlive_their_client_and_closing(self):
        c = featstore.connect(SERVER["unix"])
        s = c.node_stream("train", batch_size=100, num_neighbors=FANOUTS, table="feat", seed=1)
        first = next(s)
        c.close()  # the stream has connections of its own
        second = next(s)
        self.assertEqual(second.index, 1)
        s.close()
        s.close()  # idempotent
        self.assertEqual(s.position, 2)
        self.assertRaisesRegex(ValueError, "stream is closed", next, s)
        with self.clients["unix"].sample_gather(first.seeds, FANOUTS, "feat", seed=first.request_seed) as want:
            assert_same_arrays(self, batch_arrays(want), batch_arrays(first.batch), "a batch after close()")
        first.release(), second.release()
        for _ in range(3):  # streams dropped mid-epoch, with batches made ahead: freed by the garbage collector
            g = self.stream("grpc", prefetch=4)
            held = next(g)
            del g
            gc.collect()
            self.assertEqual(len(held.seeds), 100)
            del held

    def test_the_next_stream_starts_on_the_last_ones_connections(self):
        """A Client's streams share one owner connection, on which a closed
        stream leaves its producers' connections for the next (the next
        epoch starts warm, no new connection); a server restarted between
        epochs is reconnected to by the next stream."""
        tmp = tempfile.mkdtemp(prefix="featstore-pystream-restart-")
        sock = os.path.join(tmp, "s.sock")
        proc, ready = fs_serve.start(ARGS.featstore, SERVER["dataset"], sock)
        try:
            def unix_clients(n):
                want = f'featstore_connected_clients{{transport="unix"}} {n}\n'
                return wait_until(lambda: want in fs_serve.metrics(ready))

            c = featstore.connect("unix://" + sock, threads=2)  # two producers a stream
            epochs = []
            for epoch in range(2):
                with c.node_stream("train", batch_size=400, num_neighbors=FANOUTS, table="feat", seed=3) as s:
                    epochs.append([snapshot(b) for b in s])
                self.assertTrue(unix_clients(4), "the Client, the streams' owner and two producers: kept")
            for a, b in zip(*epochs):
                assert_same_arrays(self, a[4], b[4], f"batch {a[0]} of the same epoch on the kept connections")
            fs_serve.stop(proc)
            proc, ready = fs_serve.start(ARGS.featstore, SERVER["dataset"], sock)
            with c.node_stream("train", batch_size=400, num_neighbors=FANOUTS, table="feat", seed=3) as s:
                again = [snapshot(b) for b in s]
            self.assertEqual(len(again), len(epochs[0]), "the next epoch after a restart")
            for a, b in zip(epochs[0], again):
                assert_same_arrays(self, a[4], b[4], f"batch {a[0]} after the restart")
            c.close()
            self.assertTrue(unix_clients(0), "closing the Client closed what its streams left")
        finally:
            fs_serve.stop(proc)
            shutil.rmtree(tmp, ignore_errors=True)

    def test_a_forked_child_is_refused_by_name(self):
        with self.stream("unix") as s:
            sb = next(s)
            pid = os.fork()
            if pid == 0:  # the child: every use of the parent's stream and batch refused, nothing hangs
                code = 0
                try:
                    next(s)
                    code = 1
                except featstore.Error as e:
                    code = 0 if "before it forked" in e.message else 2
                try:
                    sb.seeds
                    code = code or 3
                except featstore.BatchReleasedError:
                    pass
                s.close()  # forgets the parent's stream
                os._exit(code)
            _, status = os.waitpid(pid, 0)
            self.assertEqual(os.waitstatus_to_exitcode(status), 0, "the child was not refused by name")
            self.assertEqual(next(s).index, 1, "the parent's stream goes on")
            self.assertEqual(len(sb.seeds), 100)


# ---- typed and link streams ----------------------------------------------------------

CITES, WRITES = ("paper", "cites", "paper"), ("author", "writes", "paper")
NUM_NEIGHBORS = {CITES: [5, 3], WRITES: [3, 0]}  # tests/test_stream_typed.c's request
NODE_TABLES = ("feat", "labels")


def hetero_arrays(hb):
    """A HeteroBatch's arrays by name, copied: every node type's nodes, batch,
    time, count_after and tables, every (edge type, hop) block with its edge
    tables, the seed groups and the link fields."""
    out = {}
    opt = lambda v: None if v is None else np.array(v)  # noqa: E731
    for t in hb.node_types:
        out[f"nodes[{t}]"], out[f"batch[{t}]"], out[f"time[{t}]"] = (opt(hb.nodes[t]), opt(hb.batch[t]),
                                                                      opt(hb.time[t]))
        out[f"count_after[{t}]"] = np.array(hb.count_after[t], dtype=np.int64)
        for table, rows in hb.x[t].items():
            out[f"x[{t}][{table}]"] = np.array(rows)
    for et in hb.edge_types:
        for h, blk in enumerate(hb.blocks[et]):
            for f in ("dst_offsets", "edge_dst", "edge_src", "edge_ids", "edge_weights"):
                out[f"blocks[{et}][{h}].{f}"] = opt(getattr(blk, f))
            for table, rows in hb.edge_attr[et][h].items():
                out[f"edge_attr[{et}][{h}][{table}]"] = np.array(rows)
    for g, (t, ids) in enumerate(hb.seed_groups):
        out[f"seed_groups[{g}]:{t}"] = np.array(ids)
    for f in ("edge_label_index", "edge_label", "edge_label_time", "src_index", "dst_pos_index", "dst_neg_index"):
        out[f] = opt(getattr(hb, f))
    return out


def assert_same_hetero(test, want, got, what):
    """Two HeteroBatches equal in every field, every array bit for bit."""
    for f in ("node_types", "edge_types", "num_hops", "link_types"):
        test.assertEqual(getattr(want, f), getattr(got, f), f"{what}: {f}")
    assert_same_arrays(test, hetero_arrays(want), hetero_arrays(got), what)


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
    checks of tests/test_stream_typed.c from the binding's side."""

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
            with self.subTest(transport=t), c.typed_stream("paper/train", batch_size=128,
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
        with c.typed_stream("paper/train", batch_size=64, num_neighbors=NUM_NEIGHBORS, node_tables=("feat",),
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
            self.assertIn("typed", repr(sb))
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
        with c.typed_stream(ids, seed_type="paper", batch_size=10, order="sequential",
                            num_neighbors={CITES: [2]}) as s:  # explicit seeds, of a given type
            got = [np.array(sb.seeds) for sb in s]
        np.testing.assert_array_equal(np.concatenate(got), ids)

    def test_the_deprecated_stream_opens_the_same_streams(self):
        """Client.stream (deprecated) with num_neighbors, and with link as a
        dict or a StreamLink: the batches of typed_stream and link_stream."""
        c = self.clients["unix"]
        typed = dict(batch_size=64, num_neighbors=NUM_NEIGHBORS, node_tables=NODE_TABLES, seed=2)
        link = dict(batch_size=50, num_neighbors={CITES: [4]}, order="sequential", seed=9)
        pairs = [(lambda: c.stream(split="paper/train", **typed), lambda: c.typed_stream("paper/train", **typed),
                  "Client.typed_stream"),
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
        """hetero_sample's and link_sample's arguments renamed in 1.6 still
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
             "put 'labels' in the request's node_tables"),
            (dict(split="valid", link=link), "INVALID_ARGUMENT", "needs hetero"),
            (dict(split="nosuch", link=link, num_neighbors=NUM_NEIGHBORS), "NOT_FOUND", "nosuch"),
            (dict(split="paper/train", num_neighbors=NUM_NEIGHBORS, seed_type="nosuch"), "INVALID_ARGUMENT", "nosuch"),
            (dict(seeds=[1, 2], num_neighbors=NUM_NEIGHBORS), "INVALID_ARGUMENT", "give seed_type"),
            (dict(seeds=[1, 2], link=link, num_neighbors=NUM_NEIGHBORS), "INVALID_ARGUMENT", "give its name as split"),
            (dict(split="paper/train", fanouts=[5]), "INVALID_ARGUMENT", "typed graph"),
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
        for kw, says in ((dict(fanouts=[5]), "fanouts: not for a typed stream"),
                         (dict(table="feat", delta="full"), "table, delta: not for a typed stream"),
                         (dict(window=4), "window: not for a typed stream"),
                         (dict(edge_ids=True), "edge_ids: not for a typed stream.*want_edge_ids")):
            with self.subTest(args=kw):
                self.assertRaisesRegex(ValueError, says, c.stream, **typed, **kw)
        self.assertRaisesRegex(ValueError, "frontier, node_tables: options of typed streams: give num_neighbors",
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
    ARGS, rest = parse_args()
    require_modules()
    os.environ["FEATSTORE_LIB"] = ARGS.lib  # before featstore loads the library
    sys.path.insert(0, os.path.join(ROOT, "client-lib", "python"))
    import numpy as np
    import featstore
    t0 = time.perf_counter()
    prog = unittest.main(argv=[sys.argv[0]] + rest, exit=False, verbosity=2)
    print(f"RESULT test_python_stream took {time.perf_counter() - t0:.1f} s")
    sys.exit(0 if prog.result.wasSuccessful() else 1)


if __name__ == "__main__":
    main()
