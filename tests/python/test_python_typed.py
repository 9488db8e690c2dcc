#!/usr/bin/python3
"""test_python_typed.py — the Python client's typed-graph calls
(``Client.hetero_sample``, ``Client.link_sample``, ``HeteroBatch``) against
a real `featstore serve`, the two examples that train through them, and
the DDP example that trains through epoch streams.

The module fixture writes both Cora datasets of examples/cora.py into a
scratch directory — ``typed`` with the 60/20/20 split the hetero example
documents, and ``link`` — and imports the homogeneous ``cora`` (the
importer's 60/20/20 split; propagated, hop tables hop_0..hop_3), and starts one server on each
(tests/lib/fs_serve.py: a Unix socket, an ephemeral gRPC port). The tests check the binding against
numpy reads of the datasets' files (blocks made of real edges with their
edge ids, DGL-block prefixes given by count_after, gathered rows, seed local
ids, link batches free of their seed edges, labels), zero-copy arrays over
unix://, identical batches over unix:// and grpc:// and whatever was
requested before, the lifetime rule and argument errors naming the bad key; then examples/train_hetero.py must reach
test_acc >= 0.80, examples/train_link.py test_auc >= 0.88 and
examples/train_graphsage_ddp.py (2 DDP ranks reading featstore streams, 10
epochs) test_acc >= 0.85 and examples/train_sign.py (SIGN over Cora's hop
tables from chunked row streams) test_acc >= 0.85, each run over unix:// and
grpc:// with the same seed printing the same final figures; train_sign.py
--model sgc (SGC on hop_2) runs once, its accuracy printed, not asserted;
train_sign.py --codec int8 (SIGN over the hop tables' int8 copies, made by
`featstore compress`) runs once over unix:// and must reach 0.85 too.

    /usr/bin/python3 tests/python/test_python_typed.py --featstore BUILD/cli/featstore --lib BUILD/client-lib/libfeatstore.so

Exits 77 (ctest's skip) when numpy, torch or xxhash (to write the datasets)
is missing. Prints RESULT lines with the measured figures.
"""
import argparse
import importlib.util
import json
import os
import re
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
SERVERS = {}  # the module fixture: "typed", "link" and "cora" -> proc, dataset, sock, unix, grpc; "dir"
np = featstore = None  # imported by main(), once the skip check passed

PAPER, WORD = "paper", "word"
CITES, CITED_BY = (PAPER, "cites", PAPER), (PAPER, "cited_by", PAPER)
HAS, IN = (PAPER, "has", WORD), (WORD, "in", PAPER)
NUM_NEIGHBORS = {CITES: [5, 3], CITED_BY: [5, 3], IN: [4, 2], HAS: [0, 3]}
DATASETS = ("typed", "link", "cora")


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--featstore", required=True, help="the featstore CLI")
    p.add_argument("--lib", required=True, help="libfeatstore.so")
    p.add_argument("--seed", type=int, default=0, help="the examples' --seed")
    args, rest = p.parse_known_args()
    return args, rest


def require_modules():
    """numpy, torch and xxhash are optional on a build machine: their absence is a skip."""
    for mod in ("numpy", "torch", "xxhash"):
        if importlib.util.find_spec(mod) is None:
            print(f"SKIP: {sys.executable} has no {mod} (apt-get install python3-{mod})")
            sys.exit(SKIP)


# ---- the server fixture ----------------------------------------------------------

def setUpModule():
    cora = fs_serve.cora()
    tmp = tempfile.mkdtemp(prefix="featstore-pytyped-")
    SERVERS["dir"] = tmp
    made = {"typed": cora.write_typed(os.path.join(tmp, "cora-typed"), split="60,20,20"),
            "link": cora.write_link(os.path.join(tmp, "cora-link")),
            "cora": fs_serve.propagate(ARGS.featstore, fs_serve.import_cora(ARGS.featstore, os.path.join(tmp, "cora")),
                                       hops=3)}
    subprocess.run([ARGS.featstore, "compress", made["cora"], "--table", "hop_0,hop_1,hop_2,hop_3", "--to", "int8"],
                   check=True, stderr=subprocess.DEVNULL)  # hop_r_int8: train_sign.py --codec int8
    for name, dataset in made.items():
        proc, ready = fs_serve.start(ARGS.featstore, dataset, os.path.join(tmp, f"{name}.sock"))
        SERVERS[name] = dict(proc=proc, dataset=dataset, sock=os.path.join(tmp, f"{name}.sock"),
                             unix="unix://" + ready["unix"], grpc="grpc://" + ready["grpc"])


def tearDownModule():
    try:
        for name in DATASETS:
            s = SERVERS.get(name)
            if s:
                status = fs_serve.stop(s["proc"])
                if status != 0:
                    raise AssertionError(f"featstore serve ({name}) exited {status} on SIGTERM, expected 0")
    finally:
        for name in DATASETS:
            s = SERVERS.get(name)
            if s and s["proc"].poll() is None:
                s["proc"].send_signal(signal.SIGKILL)
        shutil.rmtree(SERVERS.get("dir", ""), ignore_errors=True)


class Dataset:
    """A version-2 dataset's arrays, read with numpy through its manifest."""

    def __init__(self, path):
        self.path = path
        with open(os.path.join(path, "manifest.json")) as f:
            self.manifest = json.load(f)

    def load(self, name):
        return np.load(os.path.join(self.path, name))

    def edge_type(self, key):
        """(indptr, indices, edge id at each position) of edge type key."""
        e = next(e for e in self.manifest["edge_types"] if (e["src"], e["rel"], e["dst"]) == key)
        indptr, indices = self.load(e["indptr"]), self.load(e["indices"])
        ids = self.load(e["edge_ids"]) if "edge_ids" in e else np.arange(len(indices))
        return indptr, indices, ids

    def node_file(self, node_type, what):
        t = next(t for t in self.manifest["node_types"] if t["name"] == node_type)
        return self.load(t["features"][what]["file"] if what != "labels" else t["labels"]["file"])


def inside(addr, nbytes, start, length):
    return start <= addr and addr + nbytes <= start + length


def block_arrays(block):
    return [block.dst_offsets, block.edge_dst, block.edge_src] + ([block.edge_ids] if block.edge_ids is not None
                                                                  else [])


# ---- the binding ------------------------------------------------------------------

class TypedBindingTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.typed = Dataset(SERVERS["typed"]["dataset"])
        cls.link = Dataset(SERVERS["link"]["dataset"])

    def setUp(self):
        self.unix = featstore.connect(SERVERS["typed"]["unix"])
        self.grpc = featstore.connect(SERVERS["typed"]["grpc"], timeout_ms=30000)

    def tearDown(self):
        self.unix.close()
        self.grpc.close()

    def check_edges(self, b, key, hop, block):
        """Every edge of a block is an edge of the dataset, by its edge id."""
        indptr, indices, ids = self.typed.edge_type(key)
        src_type, _, dst_type = key
        u, v = b.nodes[dst_type][block.edge_dst], b.nodes[src_type][block.edge_src]
        order = np.argsort(ids)  # position of each edge id
        pos = order[np.searchsorted(ids[order], block.edge_ids)]
        np.testing.assert_array_equal(ids[pos], block.edge_ids, f"{key} hop {hop}: unknown edge ids")
        self.assertTrue(np.all((indptr[u] <= pos) & (pos < indptr[u + 1])), f"{key} hop {hop}: edge of another dst")
        np.testing.assert_array_equal(indices[pos], v, f"{key} hop {hop}: wrong source")

    def test_dgl_blocks_match_the_dataset(self):
        seeds = self.unix.split("paper/train")[:200]
        feat, labels = self.typed.node_file(PAPER, "feat"), self.typed.node_file(PAPER, "labels")
        with self.unix.hetero_sample({PAPER: seeds}, NUM_NEIGHBORS, seed=7, frontier="all",
                                     node_tables=("feat", "labels"), edge_ids=True) as b:
            self.assertEqual(b.node_types, [PAPER, WORD])
            self.assertEqual(b.edge_types, [CITES, CITED_BY, HAS, IN])  # the dataset's order
            self.assertEqual(b.num_hops, 2)
            np.testing.assert_array_equal(b.nodes[PAPER][b.seed_local[PAPER]], seeds)
            self.assertEqual(b.count_after[PAPER][0], len(np.unique(seeds)))
            self.assertEqual(b.count_after[WORD][0], 0)
            for t in b.node_types:
                self.assertEqual(b.count_after[t][-1], len(b.nodes[t]))
                self.assertEqual(len(np.unique(b.nodes[t])), len(b.nodes[t]), f"{t}: a node with two local ids")
                self.assertIsNone(b.batch[t])
                self.assertIsNone(b.time[t])
            np.testing.assert_array_equal(b.x[PAPER]["feat"], feat[b.nodes[PAPER]])
            np.testing.assert_array_equal(b.x[PAPER]["labels"][:, 0], labels[b.nodes[PAPER]])
            self.assertEqual(b.x[WORD], {}, "words have no tables")
            for key, fanouts in NUM_NEIGHBORS.items():
                src, _, dst = key
                for hop, block in enumerate(b.blocks[key]):
                    if fanouts[hop] == 0:
                        self.assertEqual(block.num_edges, 0, f"{key} hop {hop}: fanout 0 sampled")
                        continue
                    self.assertEqual(block.num_dst, b.count_after[dst][hop], f"{key} hop {hop}: not a DGL block")
                    self.assertEqual(block.num_src, b.count_after[src][hop + 1], f"{key} hop {hop}")
                    counts = np.diff(block.dst_offsets)
                    self.assertLessEqual(int(counts.max(initial=0)), fanouts[hop])
                    np.testing.assert_array_equal(np.repeat(np.arange(block.num_dst), counts), block.edge_dst)
                    self.assertTrue(np.all(block.edge_src < block.num_src))
                    self.check_edges(b, key, hop, block)
                self.assertEqual(b.edge_attr[key], [{}, {}], "Cora has no edge tables")
            self.assertIsNone(b.edge_label_index)
            self.assertIsNone(b.link_types)
            print(f"RESULT typed blocks: {sum(blk.num_edges for bl in b.blocks.values() for blk in bl)} edges over "
                  f"{len(b.nodes[PAPER])} papers and {len(b.nodes[WORD])} words, all in the dataset")

    def test_pyg_frontier_expands_only_new_nodes(self):
        seeds = self.unix.split("paper/train")[:50]
        with self.unix.hetero_sample({PAPER: seeds}, {CITES: [3, 3], IN: [2, 0], HAS: [0, 2]}, seed=1) as b:
            for key in (CITES,):
                dst = key[2]
                for hop, block in enumerate(b.blocks[key]):
                    lo = b.count_after[dst][hop - 1] if hop else 0
                    self.assertEqual(block.num_dst, b.count_after[dst][hop] - lo)
                    self.assertEqual(len(block.dst_offsets), block.num_dst + 1)
                    if block.num_edges:
                        self.assertGreaterEqual(int(block.edge_dst.min()), lo)
                        self.assertLess(int(block.edge_dst.max()), b.count_after[dst][hop])

    def test_unix_and_grpc_give_identical_batches(self):
        seeds = self.unix.split("paper/train")[:300]
        kw = dict(seed=11, frontier="all", node_tables=("feat",), edge_ids=True)
        with self.unix.hetero_sample({PAPER: seeds}, NUM_NEIGHBORS, **kw) as a, \
                self.grpc.hetero_sample({PAPER: seeds}, NUM_NEIGHBORS, **kw) as b:
            for t in a.node_types:
                np.testing.assert_array_equal(a.nodes[t], b.nodes[t])
                self.assertEqual(a.count_after[t], b.count_after[t])
            np.testing.assert_array_equal(a.x[PAPER]["feat"], b.x[PAPER]["feat"])
            for key in a.edge_types:
                for x, y in zip(a.blocks[key], b.blocks[key]):
                    for f in ("dst_offsets", "edge_dst", "edge_src", "edge_ids"):
                        np.testing.assert_array_equal(getattr(x, f), getattr(y, f))

    def test_unix_arrays_are_zero_copy_views_of_the_result_slot(self):
        seeds = self.unix.split("paper/train")[:128]
        with self.unix.hetero_sample({PAPER: seeds}, NUM_NEIGHBORS, seed=2, frontier="all", node_tables=("feat",),
                                     edge_ids=True) as b:
            base, length = b.region()
            self.assertTrue(any(inside(base, length, s, e - s) for s, e in fs_serve.slot_ranges()),
                            "the batch's region is not a result slot")
            x = b.x[PAPER]["feat"]
            self.assertFalse(x.flags.owndata or x.flags.writeable, "rows must be read-only views")
            arrays = [x, b.seed_local[PAPER]] + list(b.nodes.values()) + [
                a for blocks in b.blocks.values() for blk in blocks if blk.num_edges for a in block_arrays(blk)]
            for a in arrays:
                self.assertTrue(inside(a.ctypes.data, a.nbytes, base, length), "an array outside the batch's slot")
            t = b.torch()
            self.assertEqual(t.x[PAPER]["feat"].data_ptr(), x.ctypes.data, "torch copied the rows")
            self.assertEqual(t.blocks[CITES][0].edge_src.data_ptr(), b.blocks[CITES][0].edge_src.ctypes.data)
        self.assertTrue(b.released)
        self.assertRaises(featstore.BatchReleasedError, lambda: b.nodes)
        self.assertRaises(featstore.BatchReleasedError, b.torch)
        np.testing.assert_array_equal(x, self.typed.node_file(PAPER, "feat")[t.nodes[PAPER].numpy()])  # kept alive

    def test_link_batches_leave_out_their_seed_edges(self):
        src, dst = (self.link.load(f"link.train.{p}.npy") for p in ("src", "dst"))
        src, dst = src[:300], dst[:300]
        for uri in (SERVERS["link"]["unix"], SERVERS["link"]["grpc"]):
            with featstore.connect(uri) as c:
                et = CITES
                np.testing.assert_array_equal(c.split("link/train/src")[:300], src)
                # one whole hop shows every seed edge that is not excluded (a fanout of -1 counts as the
                # max_fanout_product limit, so -1 takes one hop); two DGL hops expand the endpoints twice
                for keep, fanouts in ((False, [-1]), (True, [-1]), (False, [30, 30])):
                    with c.link_sample(et, src, dst, neg="binary", amount=1.0, keep_seed_edges=keep,
                                       num_neighbors={et: fanouts}, seed=3, frontier="all") as b:
                        p = b.nodes[PAPER]
                        seen = set()
                        for blk in b.blocks[et]:
                            seen |= set(zip(p[blk.edge_dst].tolist(), p[blk.edge_src].tolist()))
                        seeds = set(zip(src.tolist(), dst.tolist())) | set(zip(dst.tolist(), src.tolist()))
                        self.assertEqual(len(seen & seeds), len(seeds) if keep else 0,
                                         f"keep_seed_edges={keep}: seed edges in the subgraph")
                        eli = b.edge_label_index
                        self.assertEqual(eli.shape, (2, 600))
                        np.testing.assert_array_equal(p[eli[0, :300]], src)
                        np.testing.assert_array_equal(p[eli[1, :300]], dst)
                        np.testing.assert_array_equal(b.edge_label, [1] * 300 + [0] * 300)
                        self.assertEqual(b.link_types, (PAPER, PAPER))
                        self.assertIsNone(b.src_index)
                with c.link_sample(et, src[:5], dst[:5], edge_label=[1, 0, 1, 0, 1], num_neighbors={et: [2]}) as b:
                    np.testing.assert_array_equal(b.edge_label, [1, 0, 1, 0, 1])  # given labels, no negatives
                with c.link_sample(et, src[:5], dst[:5], neg="triplet", amount=3, num_neighbors={et: [2]}) as b:
                    self.assertIsNone(b.edge_label_index)
                    self.assertEqual(b.dst_neg_index.shape, (5, 3))
                    np.testing.assert_array_equal(b.nodes[PAPER][b.src_index], src[:5])
                    np.testing.assert_array_equal(b.nodes[PAPER][b.dst_pos_index], dst[:5])

    def test_link_batches_do_not_depend_on_earlier_requests(self):
        """The same request gives the same batch whatever the sampler served
        before: here a request with more seed edges (more exclusions) in
        between, over unix:// (the connection's own sampler) and grpc:// (the
        server's). A stale exclusion index would let seed edges back in."""
        src, dst = (self.link.load(f"link.train.{p}.npy") for p in ("src", "dst"))
        et = CITES
        for uri in (SERVERS["link"]["unix"], SERVERS["link"]["grpc"]):
            with featstore.connect(uri) as c:
                def batch():
                    with c.link_sample(et, src[:256], dst[:256], neg="binary", num_neighbors={et: [10]}, seed=5,
                                       frontier="all") as b:
                        return [np.array(b.nodes[PAPER]), np.array(b.edge_label_index)] + [
                            np.array(getattr(blk, f)) for blk in b.blocks[et] for f in ("dst_offsets", "edge_src")]
                first = batch()
                c.link_sample(et, src[1000:2000], dst[1000:2000], num_neighbors={et: [10]}, seed=6).release()
                again = batch()
                for a, b in zip(first, again):
                    np.testing.assert_array_equal(a, b, f"{uri}: the same link request gave another batch after a "
                                                        f"larger one")

    def test_bad_arguments_name_the_bad_key(self):
        c = self.unix
        seeds = {PAPER: [1, 2]}
        self.assertRaisesRegex(TypeError, r"\('paper', 'cites'\)", c.hetero_sample, seeds, {(PAPER, "cites"): [1]})
        self.assertRaisesRegex(ValueError, "cited_by.*hops", c.hetero_sample, seeds, {CITES: [1, 1], CITED_BY: [1]})
        self.assertRaisesRegex(ValueError, r"cites.*\[1\] = -3", c.hetero_sample, seeds, {CITES: [1, -3]})
        self.assertRaisesRegex(ValueError, "frontier", c.hetero_sample, seeds, {CITES: [1]}, frontier="dgl")
        self.assertRaisesRegex(ValueError, "mode", c.hetero_sample, seeds, {CITES: [1]}, mode="biased")
        self.assertRaisesRegex(TypeError, r"seeds\['paper'\].*integers", c.hetero_sample, {PAPER: [1.5]},
                               {CITES: [1]})
        self.assertRaisesRegex(ValueError, r"seed_time\['word'\]", c.hetero_sample, seeds, {CITES: [1]},
                               temporal="last", seed_time={WORD: [1]})
        self.assertRaisesRegex(ValueError, "triplet", c.link_sample, CITES, [1], [2], neg="triplet", amount=1.5,
                               num_neighbors={CITES: [1]})
        self.assertRaisesRegex(ValueError, "src has 2 ids and dst 1", c.link_sample, CITES, [1, 2], [3],
                               num_neighbors={CITES: [1]})
        for bad, name in (({"author": [1]}, "author"), ({PAPER: [1]}, "writes")):
            with self.assertRaises(featstore.Error) as e:  # refused by C, by name
                c.hetero_sample(bad, {(PAPER, "writes", PAPER) if name == "writes" else CITES: [1]})
            self.assertIn(name, e.exception.message)
        with self.assertRaises(featstore.Error) as e:
            c.hetero_sample(seeds, {CITES: [1]}, temporal="uniform")  # typed Cora has no times
        self.assertIn("time", e.exception.message)

    def test_a_missing_table_error_lists_the_tables(self):
        for c in (self.unix, self.grpc):
            for kind, arg in (("node", "node_tables"), ("edge", "edge_tables")):
                with self.assertRaises(featstore.Error) as e:
                    c.hetero_sample({PAPER: [1, 2]}, {CITES: [1]}, **{arg: ("nosuch",)})
                self.assertEqual(e.exception.status, featstore.Status.NOT_FOUND)
                self.assertIn(f"has no {kind} table 'nosuch'; its {kind} tables: "
                              f"{'feat, labels' if kind == 'node' else 'none'}", e.exception.message)


# ---- the examples -----------------------------------------------------------------

FINAL = {"train_hetero.py": re.compile(r"^test_acc=(\S+) valid_acc=(\S+) best_epoch=(\d+) "),
         "train_link.py": re.compile(r"^test_auc=(\S+) valid_auc=(\S+) best_epoch=(\d+) "),
         "train_graphsage_ddp.py": re.compile(r"^test_acc=(\S+) valid_acc=(\S+) best_epoch=(\d+) "),
         "train_sign.py": re.compile(r"^test_acc=(\S+) valid_acc=(\S+) best_epoch=(\d+) ")}


def run_example(script, uri, seed, epochs=None, extra=()):
    """Runs an example as a user would; (final figures, seconds, stdout)."""
    cmd = [sys.executable, os.path.join(ROOT, "examples", script), "--uri", uri, "--seed", str(seed),
           "--torch-threads", "1"] + (["--epochs", str(epochs)] if epochs else []) + list(extra)
    env = dict(os.environ, FEATSTORE_LIB=ARGS.lib)
    t0 = time.perf_counter()
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    seconds = time.perf_counter() - t0
    if out.returncode != 0:
        raise AssertionError(f"{script} over {uri} exited {out.returncode}:\n{out.stdout}\n{out.stderr}")
    m = FINAL[script].match(out.stdout.splitlines()[-1])
    if not m:
        raise AssertionError(f"{script}: no final figures in\n{out.stdout}")
    return m.groups(), seconds, out.stdout


class TypedExamples(unittest.TestCase):
    def check(self, script, server, metric, target, epochs=None):
        runs = {}
        for transport in ("unix", "grpc"):
            figures, seconds, stdout = run_example(script, SERVERS[server][transport], ARGS.seed, epochs)
            self.assertIn(f"transport={transport}", stdout.splitlines()[0])
            self.assertRegex(stdout, r"epoch +1  loss \d+\.\d+  valid_\w+ 0\.\d+  \d+\.\d mini-batches/s")
            runs[transport] = figures
            print(f"RESULT {script} transport={transport} seed={ARGS.seed} {metric}={figures[0]} "
                  f"valid={figures[1]} best_epoch={figures[2]} seconds={seconds:.1f}")
        self.assertGreaterEqual(float(runs["unix"][0]), target, f"{script}: {metric} under {target}")
        self.assertEqual(runs["unix"], runs["grpc"], f"{script}: the same requests over grpc:// should train the "
                                                     f"same model")

    def test_hetero_graphsage_learns_typed_cora_the_same_over_both_transports(self):
        self.check("train_hetero.py", "typed", "test_acc", 0.80)

    def test_link_prediction_learns_cora_citations_the_same_over_both_transports(self):
        self.check("train_link.py", "link", "test_auc", 0.88)

    def test_ddp_graphsage_on_streams_learns_cora_the_same_over_both_transports(self):
        # train_graphsage.py's accuracy (test_python: 0.869 mean over 3 seeds) from 2 DDP ranks
        self.check("train_graphsage_ddp.py", "cora", "test_acc", 0.85, epochs=10)

    def test_sign_on_hop_tables_learns_cora_the_same_over_both_transports(self):
        # SIGN over hop_0..hop_3 read from chunked row streams; then SGC on hop_2, reported only
        self.check("train_sign.py", "cora", "test_acc", 0.85)
        figures, seconds, _ = run_example("train_sign.py", SERVERS["cora"]["unix"], ARGS.seed, extra=["--model", "sgc"])
        print(f"RESULT train_sign.py --model sgc transport=unix seed={ARGS.seed} test_acc={figures[0]} "
              f"valid={figures[1]} best_epoch={figures[2]} seconds={seconds:.1f}")

    def test_sign_on_int8_hop_tables_learns_cora(self):
        # the hop tables' int8 copies (featstore compress), served as float32: SIGN learns as on float32
        figures, seconds, stdout = run_example("train_sign.py", SERVERS["cora"]["unix"], ARGS.seed,
                                               extra=["--codec", "int8"])
        self.assertIn("tables=hop_0_int8,hop_1_int8,hop_2_int8,hop_3_int8", stdout.splitlines()[0])
        print(f"RESULT train_sign.py --codec int8 transport=unix seed={ARGS.seed} test_acc={figures[0]} "
              f"valid={figures[1]} best_epoch={figures[2]} seconds={seconds:.1f}")
        self.assertGreaterEqual(float(figures[0]), 0.85)


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
    print(f"RESULT test_python_typed took {time.perf_counter() - t0:.1f} s")
    sys.exit(0 if prog.result.wasSuccessful() else 1)


if __name__ == "__main__":
    main()
else:  # collected by pytest (tests/conftest.py): the build the environment names
    ARGS = fs_serve.pytest_args(("numpy", "torch", "xxhash"), seed=0)
    import numpy as np
    import featstore
