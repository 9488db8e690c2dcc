#!/usr/bin/python3
"""test_python_safety.py — the Python client's safety rules against a live
`featstore serve` (issue 14 item 6, "Python safety"; docs/api.md §8).

A released Batch raises ``featstore.BatchReleasedError`` for every accessor
over unix:// and grpc://; arrays taken before ``release()`` keep their own
data (and their result slot) while the next batches are fetched, and the
slot comes back when they go; a Client made in the parent and used by
forked children — ``torch.utils.data.DataLoader`` workers and plain
``os.fork`` — gives every process the right rows, and the parent's Client
and its held batch come through untouched. Every row is compared with
numpy reads of the dataset's files.

The fixture generates a small R-MAT dataset (4,096 nodes, 16 float32
features) with ``featstore gen`` into a scratch directory and serves it on
a Unix socket and an ephemeral gRPC port (tests/lib/fs_serve.py).

    /usr/bin/python3 tests/python/test_python_safety.py --featstore BUILD/cli/featstore --lib BUILD/client-lib/libfeatstore.so

Registered with ctest (tests/python/CMakeLists.txt); exits 77 (ctest's skip) when
numpy or torch is missing. Prints RESULT lines with the figures.
"""
import argparse
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))  # tests/lib: fs_serve
import fs_serve  # noqa: E402

SKIP = 77
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))  # the repository (this is tests/python/)
ARGS = None
SERVER = {}  # proc, dir, dataset, unix, grpc; table, indptr, indices (numpy)
np = torch = featstore = None  # imported by main(), once the skip check passed

FIELDS = ["kind", "num_hops", "num_nodes", "num_seeds", "rows", "dim", "dtype", "nodes", "seed_local", "blocks",
          "features"]
METHODS = ["torch", "region"]


def setUpModule():
    tmp = tempfile.mkdtemp(prefix="featstore-safety-")
    SERVER["dir"] = tmp
    dataset = os.path.join(tmp, "g")
    subprocess.run([ARGS.featstore, "gen", "rmat", "--scale", "12", "--edge-factor", "8", "--dim", "16", "--out",
                    dataset], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    proc, ready = fs_serve.start(ARGS.featstore, dataset, os.path.join(tmp, "s.sock"), stderr=subprocess.DEVNULL)
    SERVER.update(proc=proc, dataset=dataset, unix="unix://" + ready["unix"], grpc="grpc://" + ready["grpc"])
    for name in ("table_feat", "indptr", "indices"):
        SERVER[name] = np.load(os.path.join(dataset, name + ".npy"))


def tearDownModule():
    proc = SERVER.get("proc")
    try:
        if proc:
            status = fs_serve.stop(proc)
            if status != 0:
                raise AssertionError(f"featstore serve exited {status} on SIGTERM, expected 0")
    finally:
        shutil.rmtree(SERVER.get("dir", ""), ignore_errors=True)


def seeds_for(i, n=64):
    """Distinct, reproducible seeds for batch i."""
    return np.random.default_rng(i).choice(len(SERVER["indptr"]) - 1, n, replace=False).astype(np.int64)


def wrong_rows(seeds, nodes, seed_local, features, blocks=()):
    """Rows of a batch that disagree with the dataset's files: a feature row
    that is not its node's, a seed not where seed_local says, an edge whose
    id does not name that neighbour (when edge ids were asked for). 0 for a
    right batch."""
    table, indptr, indices = SERVER["table_feat"], SERVER["indptr"], SERVER["indices"]
    nodes, seed_local, features = np.asarray(nodes), np.asarray(seed_local), np.asarray(features)
    if len(seed_local) != len(seeds) or len(features) != len(nodes) or np.any((nodes < 0) | (nodes >= len(table))) \
            or np.any((seed_local < 0) | (seed_local >= len(nodes))):
        return max(len(nodes), 1)  # not even the shape of a batch: every row is wrong
    bad = int((nodes[seed_local] != seeds).sum())
    bad += int((~np.all(features == table[nodes], axis=1)).sum())
    for blk in (blk for blk in blocks if blk.edge_ids is not None):
        local = np.concatenate([blk.edge_dst, blk.edge_src])
        if np.any((local < 0) | (local >= len(nodes))) or np.any((blk.edge_ids < 0) | (blk.edge_ids >= len(indices))):
            bad += blk.num_edges
            continue
        dst, src = nodes[blk.edge_dst], nodes[blk.edge_src]
        ok = (indptr[dst] <= blk.edge_ids) & (blk.edge_ids < indptr[dst + 1]) & (indices[blk.edge_ids] == src)
        bad += int((~ok).sum())
    return bad


def check(b, seeds):
    return wrong_rows(seeds, b.nodes, b.seed_local, b.features, b.blocks)


def batches(c):
    """One batch of each kind, fresh."""
    seeds = seeds_for(1, 16)
    return {"sample": c.sample(seeds, [4, 2], seed=1), "gather": c.gather(seeds, "feat"),
            "sample_gather": c.sample_gather(seeds, [4, 2], "feat", seed=1, edge_ids=True)}


# ---- release ----------------------------------------------------------------------

class ReleaseTest(unittest.TestCase):
    def test_every_accessor_raises_after_release(self):
        for uri in (SERVER["unix"], SERVER["grpc"]):
            with featstore.connect(uri) as c:
                for kind, b in batches(c).items():
                    with b:
                        self.assertEqual(b.kind, kind)
                        b.torch()  # fine while live; region() too, where there is one
                        if kind != "sample" or uri.startswith("unix"):
                            b.region()
                    self.assertTrue(b.released)
                    self.assertEqual(repr(b), "<featstore.Batch released>")
                    b.release()  # idempotent
                    for name in FIELDS + METHODS:
                        with self.assertRaises(featstore.BatchReleasedError, msg=f"{uri} {kind}.{name}") as e:
                            value = getattr(b, name)
                            if name in METHODS:
                                value()
                        err = e.exception
                        self.assertIsInstance(err, featstore.Error)
                        self.assertIsInstance(err, ValueError)  # what 1.0 raised
                        self.assertEqual(err.status, featstore.Status.INVALID_ARGUMENT)
                        self.assertIn("batch released", str(err))
                        self.assertIn(name, err.message)
        print(f"RESULT released batches raise BatchReleasedError for all {len(FIELDS) + len(METHODS)} accessors, "
              f"3 kinds, unix:// and grpc://")

    def test_arrays_kept_past_release_keep_their_data(self):
        for uri, slots in ((SERVER["unix"], 3), (SERVER["grpc"], None)):
            with featstore.connect(uri, slots=slots) as c:
                seeds = seeds_for(2)
                b = c.sample_gather(seeds, [10, 5], "feat", seed=2, edge_ids=True)
                kept = {"features": b.features, "nodes": b.nodes, "seed_local": b.seed_local,
                        "rows 10-19": b.features[10:20], "edge_src": b.blocks[0].edge_src}
                t = b.torch()
                g = c.gather(seeds[::-1], "feat")
                gathered = g.features
                copies = {k: np.array(v) for k, v in kept.items()}
                self.assertEqual(check(b, seeds), 0)
                b.release()
                g.release()
                self.assertEqual((c.held_batches, c.kept_batches), (2, 2), uri)
                checked = 0
                for i in range(40):  # over unix:// with 3 slots: every one of these reuses the only free slot
                    s = seeds_for(100 + i)
                    with c.sample_gather(s, [10, 5], "feat", seed=100 + i, edge_ids=True) as nb:
                        self.assertEqual(check(nb, s), 0, f"{uri}: batch {i}")
                        checked += nb.num_nodes
                for k in kept:
                    np.testing.assert_array_equal(kept[k], copies[k], err_msg=f"{uri}: kept {k} changed")
                self.assertEqual(wrong_rows(seeds, kept["nodes"], kept["seed_local"], kept["features"]), 0)
                np.testing.assert_array_equal(t.features.numpy(), copies["features"])
                np.testing.assert_array_equal(gathered, SERVER["table_feat"][seeds[::-1]])
                del kept, t, gathered
                self.assertEqual((c.held_batches, c.kept_batches), (0, 0), f"{uri}: the last array gone frees it")
                with c.gather([1], "feat") as x, c.gather([2], "feat") as y, c.gather([3], "feat") as z:
                    self.assertEqual((x.rows, y.rows, z.rows), (1, 1, 1))  # all 3 slots are back
            print(f"RESULT {uri.split(':')[0]}: arrays kept past release() unchanged over 40 later batches "
                  f"({checked} rows checked); their batches freed when the arrays went")

    def test_running_out_of_slots_names_the_arrays_that_keep_them(self):
        with featstore.connect(SERVER["unix"], slots=1) as c:
            b = c.gather([1, 2], "feat")
            x = b.features
            b.release()
            with self.assertRaises(featstore.Error) as e:
                c.gather([3], "feat")
            self.assertEqual(e.exception.status, featstore.Status.RESOURCE)
            self.assertIn("1 of the 1 held by released batches whose arrays are still alive", e.exception.message)
            self.assertIn("np.array(x)", e.exception.message)
            np.testing.assert_array_equal(x, SERVER["table_feat"][[1, 2]])
            del x
            with c.gather([3], "feat") as b:
                np.testing.assert_array_equal(b.features, SERVER["table_feat"][[3]])

    def test_split_ids_are_copies(self):
        for uri in (SERVER["unix"], SERVER["grpc"]):
            with featstore.connect(uri) as c:
                ids = c.split("train")
            self.assertTrue(ids.flags.owndata, "split() returns its own array: nothing to release")
            np.testing.assert_array_equal(ids, np.load(os.path.join(SERVER["dataset"], "split_train.npy")))


# ---- fork -------------------------------------------------------------------------

def make_dataset_class():
    class FeatureBatches(torch.utils.data.Dataset):
        """Item i: the mini-batch sample_gather(seeds_for(i), [5, 3], seed=i)
        through a Client made by the parent, as copies (the worker releases
        its batch; the tensors travel to the parent)."""

        def __init__(self, client, n):
            self.client, self.n = client, n

        def __len__(self):
            return self.n

        def __getitem__(self, i):
            seeds = seeds_for(i)
            with self.client.sample_gather(seeds, [5, 3], "feat", seed=i) as b:
                return (i, os.getpid(), torch.tensor(np.array(b.nodes)), torch.tensor(np.array(b.seed_local)),
                        torch.tensor(np.array(b.features)))
    return FeatureBatches


class ForkTest(unittest.TestCase):
    def test_dataloader_workers_share_the_parents_client(self):
        for uri, n in ((SERVER["unix"], 300), (SERVER["grpc"], 100)):
            t0 = time.perf_counter()
            c = featstore.connect(uri)
            held = c.sample_gather(seeds_for(7), [5, 3], "feat", seed=7)  # held across the workers' lives
            held_copy = np.array(held.features)
            loader = torch.utils.data.DataLoader(make_dataset_class()(c, n), batch_size=None, num_workers=2,
                                                 multiprocessing_context="fork", timeout=120)
            wrong = rows = wrong_batches = 0
            pids, seen = set(), []
            for i, pid, nodes, seed_local, features in loader:
                seeds = seeds_for(i)
                bad = wrong_rows(seeds, nodes.numpy(), seed_local.numpy(), features.numpy())
                wrong, wrong_batches, rows = wrong + bad, wrong_batches + (bad > 0), rows + len(nodes)
                pids.add(pid)
                seen.append(i)
                if i % 10 == 0:  # the parent calls too, while the workers do
                    with c.sample_gather(seeds, [5, 3], "feat", seed=i) as mine:
                        wrong += wrong_rows(seeds, mine.nodes, mine.seed_local, mine.features)
            self.assertEqual(sorted(seen), list(range(n)))
            self.assertEqual(wrong, 0, f"{uri}: {wrong} wrong rows of {rows}, in {wrong_batches} of {n} batches")
            self.assertEqual(len(pids), 2)
            self.assertNotIn(os.getpid(), pids)
            np.testing.assert_array_equal(held.features, held_copy, err_msg="the parent's held batch changed")
            self.assertEqual(check(held, seeds_for(7)), 0)
            self.assertEqual(c.info().num_nodes, len(SERVER["indptr"]) - 1)
            self.assertIn("featstore_requests_total", c.stats())
            with c.sample_gather(seeds_for(8), [5, 3], "feat", seed=8) as after:
                self.assertEqual(check(after, seeds_for(8)), 0)
            held.release()
            c.close()
            print(f"RESULT dataloader {uri.split(':')[0]}: {n} batches from 2 fork workers sharing the parent's "
                  f"Client, {rows} rows checked, {wrong} wrong; the parent's Client and held batch intact "
                  f"({time.perf_counter() - t0:.1f} s)")

    def test_os_fork_children_and_parent_get_their_own_rows(self):
        for uri in (SERVER["unix"], SERVER["grpc"]):
            c = featstore.connect(uri, slots=2)
            b0 = c.sample_gather(seeds_for(9), [5, 3], "feat", seed=9, edge_ids=True)
            x0, copy0 = b0.features, np.array(b0.features)
            children = []
            for k in range(2):
                r, w = os.pipe()
                pid = os.fork()
                if pid == 0:
                    os.close(r)
                    child_main(c, b0, k, w)  # never returns
                os.close(w)
                children.append((pid, r))
            wrong = 0
            for i in range(60):  # the parent's calls, while the children make theirs
                s = seeds_for(500 + i)
                with c.sample_gather(s, [5, 3], "feat", seed=500 + i, edge_ids=True) as b:
                    wrong += check(b, s)
            reports = []
            for pid, r in children:
                status = fs_serve.wait_child(pid)
                with os.fdopen(r) as f:
                    text = f.read()
                self.assertEqual(status, 0, f"{uri}: child {pid} exited {status}: {text}")
                reports.append(json.loads(text))
            self.assertEqual(wrong, 0, f"{uri}: the parent got {wrong} wrong rows")
            for rep in reports:
                self.assertEqual(rep["errors"], [], uri)
                self.assertEqual(rep["wrong"], 0, f"{uri}: child {rep['pid']} got wrong rows")
            np.testing.assert_array_equal(x0, copy0, err_msg="an array of the parent's batch changed")
            self.assertEqual(check(b0, seeds_for(9)), 0)
            self.assertIn("featstore_requests_total", c.stats())
            b0.release()
            c.close()
            print(f"RESULT os.fork {uri.split(':')[0]}: 2 children x 60 batches through the parent's Client "
                  f"(reconnected: {[r['transport'] for r in reports]}), parent 60 batches at the same time, "
                  f"0 wrong rows; the parent's batch and Client intact")


def child_main(c, b0, k, w):
    """A forked child: the parent's batch is unusable here, the Client works
    (it reconnects by itself), every row is right. Reports JSON on fd w."""
    report = {"pid": os.getpid(), "errors": [], "wrong": 0, "transport": None}
    code = 1
    try:
        for name in FIELDS + METHODS:
            try:
                value = getattr(b0, name)
                if name in METHODS:
                    value()
                report["errors"].append(f"the parent's batch: {name} did not raise")
            except featstore.BatchReleasedError as e:
                if "before it forked" not in str(e):
                    report["errors"].append(f"the parent's batch: {name}: {e}")
        for i in range(60):
            s = seeds_for(1000 * (k + 1) + i)
            with c.sample_gather(s, [5, 3], "feat", seed=i, edge_ids=True) as b:
                report["wrong"] += check(b, s)
        if c.info().num_nodes != len(SERVER["indptr"]) - 1 or "featstore_requests_total" not in c.stats():
            report["errors"].append("info/stats through the child's connection")
        report["transport"] = c.transport
        code = 0
    except Exception:
        report["errors"].append(traceback.format_exc())
    finally:
        try:
            os.write(w, json.dumps(report).encode())
        finally:
            os._exit(code)


def main():
    global ARGS, featstore, np, torch
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--featstore", required=True, help="the featstore CLI")
    p.add_argument("--lib", required=True, help="libfeatstore.so")
    ARGS, rest = p.parse_known_args()
    for mod in ("numpy", "torch"):
        if importlib.util.find_spec(mod) is None:
            print(f"SKIP: {sys.executable} has no {mod} (apt-get install python3-{mod})")
            sys.exit(SKIP)
    os.environ["FEATSTORE_LIB"] = ARGS.lib  # before featstore loads the library
    sys.path.insert(0, os.path.join(ROOT, "client-lib", "python"))
    import numpy as np
    import torch
    import featstore
    torch.set_num_threads(1)
    t0 = time.perf_counter()
    prog = unittest.main(argv=[sys.argv[0]] + rest, exit=False, verbosity=2)
    print(f"RESULT test_python_safety took {time.perf_counter() - t0:.1f} s")
    sys.exit(0 if prog.result.wasSuccessful() else 1)


if __name__ == "__main__":
    main()
else:  # collected by pytest (tests/conftest.py): the build the environment names
    ARGS = fs_serve.pytest_args(("numpy", "torch"))
    import numpy as np
    import torch
    import featstore
