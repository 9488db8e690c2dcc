#!/usr/bin/python3
"""test_python_stream.py — epoch streams from Python (``Client.node_stream``,
``hetero_stream``, ``link_stream``, ``row_stream``, the deprecated
``Client.stream``; ``featstore.Stream``, ``StreamBatch``, ``EpochPlan``:
client-lib/python/featstore/stream.py, _stream_calls.py, plan.py) against a
real `featstore serve`, the checks of tests/integration/streams/test_stream.c from the binding's
side.

The module fixture imports Cora (tests/data/cora.npz, symmetrised, the
importer's seeded 60/20/20 split: 1624 training nodes, tables "feat" and
"labels") and starts one server on a Unix socket and an ephemeral gRPC port
(tests/lib/fs_serve.py). Over both transports: every stream batch is the
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
sample_gather(fanouts=) still works, deprecated. Over grpc:// and unix://
a Client's streams keep their connections for the next epoch (over
grpc://, the same TCP connections; closed before a fork, so that a forked
child can use gRPC). Over
unix:// also: the hold limit and the lifetime rule (released batches raise,
arrays kept past release keep their data and count against the hold),
prefetching, explicit seeds in sequential order without labels, streams
outliving close() of their Client and garbage collection, and a forked
child refused by name.

Row, typed and link streams: tests/python/test_python_stream_kinds.py.

    /usr/bin/python3 tests/python/test_python_stream.py --featstore BUILD/cli/featstore --lib BUILD/client-lib/libfeatstore.so

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

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))  # tests/lib: fs_serve
import fs_serve  # noqa: E402
from stream_checks import assert_same_arrays, batch_arrays, snapshot, wait_until  # noqa: E402

SKIP = 77
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))  # the repository (this is tests/python/)
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


def client_ports(port):
    """The local ports of this machine's established TCP connections to
    `port`: this process's gRPC connections to the fixture's server, the
    only client of its port."""
    return {local for local, remote in fs_serve.tcp_sockets("01") if remote == port}


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
        """The same through Client.stream, deprecated since 1.5 (its 1.4 names)."""
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
            with self.subTest(option=other), \
                    self.assertRaisesRegex(TypeError, f"unexpected keyword argument '{other}'"):
                self.stream("unix", **{other: None})
        self.assertRaisesRegex(TypeError, "seeds must be integers", self.stream, "unix", seeds=[1.5])
        self.assertRaisesRegex(ValueError, "window 0", self.stream, "unix", delta="full", reorder_window=0)
        with self.assertRaisesRegex(ValueError, "tables must be a non-empty list"):
            self.clients["unix"].row_stream("train", tables=[], batch_size=10)

    def test_calls_chooses_who_makes_grpc_batches(self):
        """node_stream(calls=...): fs_stream_node_opts_t.calls, the option
        that replaces setting FEATSTORE_STREAM_CALLS=batch. Over grpc://
        "batch" (this process's calls) and "stream" (the server's one call)
        give the same batches; "stream" over unix:// and an unknown value
        are refused by name."""
        with self.stream("grpc", calls="batch") as a, self.stream("grpc", calls="stream") as b:
            for _ in range(3):
                x, y = next(a), next(b)
                np.testing.assert_array_equal(x.seeds, y.seeds)
                np.testing.assert_array_equal(x.batch.nodes, y.batch.nodes)
                np.testing.assert_array_equal(x.batch.features, y.batch.features)
                x.release(), y.release()
        with self.assertRaises(featstore.Error) as e:
            self.stream("unix", calls="stream")
        self.assertEqual(e.exception.status, featstore.Status.UNSUPPORTED)
        self.assertIn("calls = FS_STREAM_CALLS_STREAM, but over unix://", e.exception.message)
        self.assertRaisesRegex(ValueError, "unknown calls 'server'", self.stream, "unix", calls="server")

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
        two batches per producer (over unix:// one producer per thread;
        over grpc:// one per core, up to 4), and a stream opened with prefetch=0 makes exactly that many ahead."""
        for threads, want in ((1, 2), (2, 4), (3, 6), (12, 16)):
            with featstore.connect(SERVER["unix"], threads=threads) as c:
                self.assertEqual(c.default_prefetch(), want, f"threads={threads}")
                self.assertEqual(c.default_prefetch(producers=1), 2)
        cores = min(len(os.sched_getaffinity(0)), 4)
        self.assertEqual(self.clients["grpc"].default_prefetch(), 2 * cores, "grpc://: a producer per core, up to 4")
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

    def test_grpc_streams_keep_their_connections_and_let_go_before_a_fork(self):
        """Over grpc:// too a Client's streams share one owner, which keeps a
        closed stream's producer connection for the next (the same TCP
        connections serve both epochs, and stay open between them); a fork
        closes them (gRPC's threads do not survive one), so the child can
        connect over gRPC, and the parent's next stream connects anew. (How
        soon gRPC tears a closed channel's TCP connection down is its own:
        seconds after the last close, so closing is checked over unix://.)"""
        port = int(SERVER["grpc"].rsplit(":", 1)[1])
        c = featstore.connect(SERVER["grpc"], timeout_ms=30000)
        try:
            c_nodes = c.info().num_nodes
            epochs, during = [], []
            for epoch in range(2):
                with c.node_stream("train", batch_size=400, num_neighbors=FANOUTS, table="feat", seed=3) as s:
                    batches = [snapshot(next(s))]
                    during.append(client_ports(port))
                    batches += [snapshot(b) for b in s]
                epochs.append(batches)
                self.assertTrue(wait_until(lambda: client_ports(port) == during[0]),
                                f"after epoch {epoch}: {client_ports(port)}, want the stream's {during[0]} kept")
            self.assertGreaterEqual(len(during[0]), 2, "the streams' owner and producer")
            self.assertEqual(during[1], during[0], "the second epoch on the first one's connections")
            for a, b in zip(*epochs):
                assert_same_arrays(self, a[4], b[4], f"batch {a[0]} of the same epoch on the kept connections")
            r, w = os.pipe()
            pid = os.fork()
            if pid == 0:  # the child: gRPC must not have been running at the fork
                code = 1
                try:
                    os.close(r)
                    child = featstore.connect(SERVER["grpc"], timeout_ms=30000)
                    code = 0 if child.info().num_nodes == c_nodes else 2
                    child.close()
                except BaseException as e:  # noqa: B036 (reported through the pipe, never raised in the child)
                    os.write(w, repr(e).encode()[:2000])
                finally:
                    os._exit(code)
            os.close(w)
            status = fs_serve.wait_child(pid)
            with os.fdopen(r) as f:
                why = f.read()
            self.assertEqual(status, 0, f"the forked child could not use gRPC: {why}")
            self.assertTrue(wait_until(lambda: not (client_ports(port) & during[0])),
                            "the kept connections closed before the fork")
            with c.node_stream("train", batch_size=400, num_neighbors=FANOUTS, table="feat", seed=3) as s:
                again = [snapshot(b) for b in s]
            for a, b in zip(epochs[0], again):
                assert_same_arrays(self, a[4], b[4], f"batch {a[0]} on new connections after the fork")
        finally:
            c.close()

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
else:  # collected by pytest (tests/conftest.py): the build the environment names
    ARGS = fs_serve.pytest_args()
    import numpy as np
    import featstore
