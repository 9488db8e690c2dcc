#!/usr/bin/python3
"""test_python_stream.py — epoch streams from Python (``Client.stream``,
``featstore.Stream``, ``StreamBatch``: client-lib/python/featstore/stream.py)
against a real `featstore serve`, the checks of tests/test_stream.c from the
binding's side.

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
batches bit for bit; bad arguments raise featstore.Error with the C status
and a message naming the problem (ValueError for an unknown order). Over
unix:// also: the hold limit and the lifetime rule (released batches raise,
arrays kept past release keep their data and count against the hold),
prefetching, explicit seeds in sequential order without labels, streams
outliving close() of their Client and garbage collection, and a forked
child refused by name.

    /usr/bin/python3 tests/test_python_stream.py --featstore BUILD/cli/featstore --lib BUILD/client-lib/libfeatstore.so

Exits 77 (ctest's skip) when numpy is missing.
"""
import argparse
import gc
import importlib.util
import os
import shutil
import sys
import tempfile
import time
import unittest

import fs_serve

SKIP = 77
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
ARGS = None  # parsed in main()
SERVER = {}  # the module fixture: proc, dir, unix, grpc
np = featstore = None  # imported by main(), once the skip check passed

FANOUTS = [10, 5]
TRANSPORTS = ("unix", "grpc")


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
    SERVER.update(proc=proc, unix="unix://" + ready["unix"], grpc="grpc://" + ready["grpc"])


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
        args = dict(split="train", batch_size=100, fanouts=FANOUTS, table="feat", seed=5, epoch=1)
        args.update(kw)
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

    def test_delta_batches_reassemble_to_the_explicit_features(self):
        for t in TRANSPORTS:
            c = self.clients[t]
            for delta, window in (("full", 4), ("only", 1)):
                with self.subTest(transport=t, delta=delta), self.stream(t, delta=delta, window=window) as s:
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
            (dict(table="nosuch"), "NOT_FOUND", "no table 'nosuch'"),
            (dict(batch_size=0), "INVALID_ARGUMENT", "batch size 0"),
            (dict(labels="nolabels"), "NOT_FOUND", "no label table 'nolabels'"),
            (dict(seeds=[1, 2, 3]), "INVALID_ARGUMENT", "not both"),
            (dict(split=None), "INVALID_ARGUMENT", "not neither"),
            (dict(prefetch=17), "INVALID_ARGUMENT", "prefetch 17"),
            (dict(hold=0, prefetch=0, start_batch=99), "INVALID_ARGUMENT", "start_batch 99"),
        ]
        for t in TRANSPORTS:
            for kw, status, says in cases:
                with self.subTest(transport=t, args=kw):
                    with self.assertRaises(featstore.Error) as e:
                        self.stream(t, **kw)
                    self.assertEqual(e.exception.status, featstore.Status[status])
                    self.assertIn(says, e.exception.message)
            with self.assertRaisesRegex(ValueError, "unknown stream order 'shuffled'.*random, sequential, chunked"):
                self.stream(t, order="shuffled")
        with self.assertRaisesRegex(ValueError, "fanouts"):
            self.stream("unix", fanouts=[])
        with self.assertRaisesRegex(TypeError, "seeds must be integers"):
            self.stream("unix", split=None, seeds=[1.5])
        with self.assertRaisesRegex(TypeError, "labels"):
            self.stream("unix", labels=3)
        with self.assertRaisesRegex(ValueError, "seed -1"):
            self.stream("unix", seed=-1)
        closed = featstore.connect(SERVER["unix"])
        closed.close()
        self.assertRaisesRegex(ValueError, "closed", closed.stream, split="train", batch_size=10, fanouts=[2])

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

    def test_explicit_seeds_in_order_without_labels(self):
        seeds = np.array([(i * 53) % 2708 for i in range(37)], dtype=np.int64)
        with self.stream("unix", split=None, seeds=seeds, batch_size=10, order="sequential", labels="") as s:
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
        s = c.stream(split="train", batch_size=100, fanouts=FANOUTS, table="feat", seed=1)
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
