#!/usr/bin/python3
"""test_partition_oracle.py — `featstore partition` checked by an independent oracle (ctest: test_partition_oracle).

    /usr/bin/python3 tests/integration/partition/test_partition_oracle.py --featstore BUILD/cli/featstore

The oracle reads the source dataset and the partition root with numpy alone
(docs/format.md), never featstore's code, and checks that:

- every part is the book's: its manifest's "partition" id, index and parts,
  each node type's first, count and total; the ranges are contiguous;
- each node map is a bijection onto 0..count-1 and agrees with the parts'
  orig_ids (ascending within a part: new ids keep the source's order);
- every source row (CSC, toward the destination) equals its part's row mapped
  back through the node maps, position by position, with the same weights,
  times and edge ids (the source's edge_ids, or the position);
- features (float32, float16, bfloat16 bits), labels and node times equal the
  source's rows; splits and link splits (label, time, given negatives) are the
  source's as sets, each in the part owning the node or the destination;
- the edge cut and the balance it recomputes equal the book's.

It runs on a homogeneous R-MAT (1, 4 and 16 parts), a typed one (`gen rmat
--typed`, its edge feature table removed), a dataset with every kind of array
(featstore.write_dataset), with --method metis where the build has METIS; and
checks that the streaming partitioner keeps training nodes and in-edges within
the imbalance on R-MAT with a cut clearly below a random assignment's.
Needs python3-numpy (and python3-xxhash for write_dataset); else exits 77.
"""
import argparse
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

SKIP = 77
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))  # the repository (this is tests/integration/partition/)
ARGS = None
np = None  # imported by main(), once the skip check passed


def run(*argv, ok=True):
    r = subprocess.run([ARGS.featstore, *map(str, argv)], capture_output=True, text=True, timeout=600)
    if ok and r.returncode != 0:
        raise AssertionError(f"featstore {' '.join(map(str, argv))} exited {r.returncode}:\n{r.stdout}{r.stderr}")
    return r


def have_metis():
    return "lacks METIS" not in run("partition", "/nonexistent", "--parts", "2", "--out", "/nonexistent-out",
                                    "--method", "metis", ok=False).stderr


# ---- the source, read from its files ---------------------------------------------------------

def load(d, f):
    return np.load(os.path.join(d, f), mmap_mode="r", allow_pickle=False)


class Source:
    """A dataset (version 1 or 2) as node types and edge types of numpy arrays."""

    def __init__(self, d):
        with open(os.path.join(d, "manifest.json")) as f:
            m = json.load(f)
        self.dir, self.types, self.edges, self.links = d, [], [], {}
        if m["version"] == 1:
            self.types.append(self.node_type(d, {"name": "node", "count": m["num_nodes"], "features": m.get("features"),
                                                 "labels": m.get("labels"), "splits": m.get("splits")}))
            t = m["topology"]
            self.edges.append(self.edge_type(d, {"src": "node", "rel": "to", "dst": "node", "indptr": t["indptr"],
                                                 "indices": t["indices"], "weights": t.get("edge_weights")}))
        else:
            self.types = [self.node_type(d, o) for o in m["node_types"]]
            self.edges = [self.edge_type(d, o) for o in m["edge_types"]]
            for name, o in m.get("link_splits", {}).items():
                self.links[name] = {"edge_type": tuple(o["edge_type"]),
                                    **{k: np.asarray(load(d, o[k])) for k in ("src", "dst", "label", "time", "neg_dst")
                                       if k in o}}
        self.type_index = {t["name"]: i for i, t in enumerate(self.types)}

    @staticmethod
    def node_type(d, o):
        t = {"name": o["name"], "count": o["count"], "tables": {}, "splits": {}}
        for name, f in (o.get("features") or {}).items():
            t["tables"][name] = load(d, f["file"])
        if o.get("labels"):
            t["tables"]["labels"] = load(d, o["labels"]["file"])
        if o.get("time"):
            t["tables"]["time"] = load(d, o["time"])
        for name, f in (o.get("splits") or {}).items():
            t["splits"][name] = np.asarray(load(d, f))
        if o.get("orig_ids"):
            t["orig_ids"] = np.asarray(load(d, o["orig_ids"]))
        for k in ("first", "total"):
            if k in o:
                t[k] = o[k]
        return t

    @staticmethod
    def edge_type(d, o):
        e = {"key": (o["src"], o["rel"], o["dst"]), "indptr": np.asarray(load(d, o["indptr"])),
             "indices": np.asarray(load(d, o["indices"])).astype(np.int64)}
        n = len(e["indices"])
        e["edge_ids"] = np.asarray(load(d, o["edge_ids"])) if o.get("edge_ids") else np.arange(n, dtype=np.int64)
        for k in ("weights", "time"):
            e[k] = np.asarray(load(d, o[k])) if o.get(k) else None
        e["total_edges"] = o.get("total_edges", n)
        return e


def positions(indptr, rows):
    """The CSC positions of rows, row after row."""
    starts, ends = indptr[rows], indptr[np.asarray(rows) + 1]
    lens = ends - starts
    return np.repeat(starts - np.concatenate(([0], np.cumsum(lens)[:-1])), lens) + np.arange(lens.sum())


# ---- the oracle ----------------------------------------------------------------------------

class Oracle:
    def __init__(self, test, src_dir, root):
        self.t, self.src, self.root = test, Source(src_dir), root
        with open(os.path.join(root, "partition.json")) as f:
            self.book = json.load(f)
        self.V = self.book["parts"]
        self.parts = [Source(os.path.join(root, p["dir"])) for p in self.book["part_dirs"]]
        self.manifests = []
        for p in self.book["part_dirs"]:
            with open(os.path.join(root, p["dir"], "manifest.json")) as f:
                self.manifests.append(json.load(f))

    def check(self):
        self.check_book()
        for p in range(self.V):
            self.check_nodes(p)
            self.check_edges(p)
        self.check_links()
        self.check_quality()

    def check_book(self):
        t = self.t
        t.assertEqual(self.book["format"], "featstore-partitions")
        t.assertEqual(len(self.book["node_types"]), len(self.src.types))
        self.first, self.map, self.inv, self.owner = [], [], [], []
        for bt, st in zip(self.book["node_types"], self.src.types):
            t.assertEqual((bt["name"], bt["count"]), (st["name"], st["count"]))
            first = np.array(bt["first"])
            t.assertEqual(len(first), self.V + 1)
            t.assertEqual((first[0], first[-1]), (0, st["count"]))
            t.assertTrue((np.diff(first) >= 0).all(), "ranges not contiguous")
            m = np.load(os.path.join(self.root, bt["node_map"]))
            t.assertTrue(np.array_equal(np.sort(m), np.arange(st["count"])), f"{bt['node_map']}: not a bijection")
            inv = np.empty_like(m)
            inv[m] = np.arange(len(m))
            self.first.append(first), self.map.append(m), self.inv.append(inv)
            self.owner.append(np.searchsorted(first, m, side="right") - 1)
        for p, m in enumerate(self.manifests):
            t.assertEqual(m["partition"], {"id": self.book["id"], "index": p, "parts": self.V})

    def check_nodes(self, p):
        t, part = self.t, self.parts[p]
        for i, (pt, st) in enumerate(zip(part.types, self.src.types)):
            first = self.first[i]
            t.assertEqual((pt["first"], pt["count"], pt["total"]), (first[p], first[p + 1] - first[p], st["count"]))
            orig = pt["orig_ids"]
            t.assertTrue(np.array_equal(self.map[i][orig], first[p] + np.arange(pt["count"])), "orig_ids vs node map")
            t.assertTrue((np.diff(orig) > 0).all(), "a part's nodes keep ascending source ids")
            t.assertEqual(set(pt["tables"]), set(st["tables"]))
            for name, table in st["tables"].items():
                t.assertTrue(np.array_equal(np.asarray(pt["tables"][name]), np.asarray(table)[orig]),
                             f"part {p}, type {st['name']}, table {name}")
            t.assertEqual(set(pt["splits"]), set(st["splits"]))
            for name, ids in st["splits"].items():
                got = pt["splits"][name]
                t.assertTrue(((got >= first[p]) & (got < first[p + 1])).all(), "split ids in the owned range")
                want = self.map[i][ids[self.owner[i][ids] == p]]
                t.assertEqual(sorted(got.tolist()), sorted(want.tolist()), f"part {p}, split {name}")

    def check_edges(self, p):
        t, part = self.t, self.parts[p]
        t.assertEqual([e["key"] for e in part.edges], [e["key"] for e in self.src.edges])
        for pe, se in zip(part.edges, self.src.edges):
            si, di = self.src.type_index[se["key"][0]], self.src.type_index[se["key"][2]]
            rows = part.types[di]["orig_ids"]
            pos = positions(se["indptr"], rows)
            t.assertTrue(np.array_equal(np.diff(pe["indptr"]), se["indptr"][rows + 1] - se["indptr"][rows]))
            t.assertTrue(np.array_equal(self.inv[si][pe["indices"]], se["indices"][pos]), f"rows of {se['key']}")
            t.assertTrue(np.array_equal(pe["edge_ids"], se["edge_ids"][pos]), "edge ids")
            t.assertEqual(pe["total_edges"], len(se["indices"]))
            for k in ("weights", "time"):
                t.assertEqual(pe[k] is None, se[k] is None)
                if se[k] is not None:
                    t.assertTrue(np.array_equal(pe[k], se[k][pos]), k)

    def check_links(self):
        for name, sl in self.src.links.items():
            e = sl["edge_type"]
            si, di = self.src.type_index[e[0]], self.src.type_index[e[2]]

            def rows(link, src_map, dst_map):
                cols = [src_map(link["src"]), dst_map(link["dst"])] + [link[k] for k in ("label", "time") if k in link]
                neg = [tuple(r) for r in dst_map(link["neg_dst"])] if "neg_dst" in link else [()] * len(link["src"])
                return list(zip(*[c.tolist() for c in cols], neg))
            want = rows(sl, lambda a: a, lambda a: a)
            got = []
            for p, part in enumerate(self.parts):
                pl = part.links[name]
                self.t.assertTrue(((pl["dst"] >= self.first[di][p]) & (pl["dst"] < self.first[di][p + 1])).all())
                got += rows(pl, lambda a: self.inv[si][a], lambda a: self.inv[di][a])
            self.t.assertEqual(sorted(got), sorted(want), f"link split {name}")

    def check_quality(self):
        t, q = self.t, self.book["quality"]
        cut_total = 0
        for k, se in enumerate(self.src.edges):
            si, di = self.src.type_index[se["key"][0]], self.src.type_index[se["key"][2]]
            dst = np.repeat(np.arange(len(se["indptr"]) - 1), np.diff(se["indptr"]))
            cut = int((self.owner[si][se["indices"]] != self.owner[di][dst]).sum())
            t.assertEqual(q["edge_cut"]["edge_types"][k]["count"], cut, f"cut of {se['key']}")
            cut_total += cut
        t.assertEqual(q["edge_cut"]["count"], cut_total)
        self.cut_fraction = cut_total / max(1, sum(len(e["indices"]) for e in self.src.edges))
        self.balance = {}
        for i, st in enumerate(self.src.types):
            loads = {"nodes": np.diff(self.first[i]), "train": np.zeros(self.V), "edges": np.zeros(self.V)}
            if "train" in st["splits"]:
                loads["train"] = np.bincount(self.owner[i][np.unique(st["splits"]["train"])], minlength=self.V)
            for se in self.src.edges:
                if self.src.type_index[se["key"][2]] == i:
                    loads["edges"] = loads["edges"] + np.bincount(self.owner[i], weights=np.diff(se["indptr"]),
                                                                  minlength=self.V)
            book = q["balance"]["node_types"][i]
            for k, load in loads.items():
                want = None if load.sum() == 0 else float(load.max() / (load.sum() / self.V))
                if want is None:
                    t.assertIsNone(book[k])
                else:
                    t.assertAlmostEqual(book[k], want, places=9, msg=f"balance {k} of {st['name']}")
            self.balance[st["name"]] = {k: book[k] for k in loads}


# ---- the datasets --------------------------------------------------------------------------

def strip_edge_tables(d):
    """A typed R-MAT without its edge feature table (which partition refuses)."""
    with open(os.path.join(d, "manifest.json")) as f:
        m = json.load(f)
    for e in m["edge_types"]:
        for t in e.pop("features", {}).values():
            m["files"].pop(t["file"], None)
            os.remove(os.path.join(d, t["file"]))
    with open(os.path.join(d, "manifest.json"), "w") as f:
        json.dump(m, f, indent=2)


def every_array(d):
    """Two node types, float32 and float16 tables, labels, times, splits; weighted, timed edge
    types with reverses (so edge ids are not positions); link splits with labels, times and negatives."""
    import featstore
    rng = np.random.default_rng(7)
    na, npp, e1, e2 = 300, 500, 1500, 2500
    w_src, w_dst = rng.integers(0, na, e1), rng.integers(0, npp, e1)
    c_src, c_dst = rng.integers(0, npp, e2), rng.integers(0, npp, e2)
    pick = rng.permutation(e2)[:200]
    featstore.write_dataset(d, name="every", node_types={
        "author": {"count": na, "features": {"x": rng.standard_normal((na, 4)).astype(np.float32)},
                   "time": rng.integers(0, 100, na)},
        "paper": {"count": npp, "features": {"feat": rng.standard_normal((npp, 8)).astype(np.float32),
                                             "half": rng.standard_normal((npp, 3)).astype(np.float16)},
                  "labels": rng.integers(-1, 5, npp), "num_classes": 5, "time": rng.integers(0, 50, npp),
                  "splits": {"train": rng.permutation(npp)[:300], "valid": np.arange(300, 400)}}},
        edge_types={("author", "writes", "paper"): {"edge_index": np.stack([w_src, w_dst]),
                                                    "time": rng.integers(0, 9, e1), "reverse": "written_by"},
                    ("paper", "cites", "paper"): {"edge_index": np.stack([c_src, c_dst]),
                                                  "weights": rng.random(e2).astype(np.float32),
                                                  "time": rng.integers(0, 9, e2)}},
        link_splits={"test": {"edge_type": ("paper", "cites", "paper"), "src": c_src[pick], "dst": c_dst[pick],
                              "label": rng.integers(0, 2, 200), "time": rng.integers(0, 9, 200),
                              "neg_dst": rng.integers(0, npp, (200, 3))}})


class Partition(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="featstore-partition-")
        cls.rmat = os.path.join(cls.tmp, "rmat")
        run("gen", "rmat", "--scale", 10, "--edge-factor", 8, "--dim", 16, "--dtype", "bfloat16", "--symmetrize",
            "--dedup", "--drop-self-loops", "--permute", "--out", cls.rmat)
        cls.metis = have_metis()

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def partition(self, src, parts, method="stream"):
        out = os.path.join(self.tmp, f"{os.path.basename(src)}.{method}.{parts}")
        r = run("partition", src, "--parts", parts, "--out", out, "--method", method, "--force")
        self.assertIn("edge cut", r.stderr)
        self.assertIn("peak RSS", r.stderr)
        info = run("info", out, ok=False)
        self.assertEqual(info.returncode, 0, info.stdout + info.stderr)
        o = Oracle(self, src, out)
        o.check()
        return o

    def test_rmat_homogeneous_1_4_16_parts(self):
        for parts in (1, 4, 16):
            with self.subTest(parts=parts):
                o = self.partition(self.rmat, parts)
                if parts == 1:
                    self.assertEqual(o.book["quality"]["edge_cut"]["count"], 0)

    def test_typed_rmat(self):
        d = os.path.join(self.tmp, "typed")
        run("gen", "rmat", "--typed", "--scale", 9, "--dim", 4, "--out", d)
        strip_edge_tables(d)
        self.partition(d, 4)
        if self.metis:
            self.partition(d, 4, "metis")

    def test_every_kind_of_array(self):
        if importlib.util.find_spec("xxhash") is None:
            self.skipTest("no python3-xxhash for featstore.write_dataset")
        d = os.path.join(self.tmp, "every")
        every_array(d)
        for parts in (1, 3):
            self.partition(d, parts)
        if self.metis:
            self.partition(d, 3, "metis")

    def test_metis_rmat(self):
        if not self.metis:
            self.skipTest("this build has no METIS")
        for parts in (4, 16):
            o = self.partition(self.rmat, parts, "metis")
            for k in ("nodes", "train", "edges"):
                self.assertLessEqual(o.balance["node"][k], 1.05 + 1e-9, f"METIS balance of {k}")

    def test_hot_list_by_reach(self):
        """--hotness reach: the hot list is the quarter of the nodes with the
        most 3-hop reach from the train nodes (numpy's A^3 t / N_t, mass moved
        along the CSR lists), hottest first; unknown estimators and typed
        graphs are refused, naming why."""
        out = os.path.join(self.tmp, "rmat.reach")
        run("partition", self.rmat, "--parts", 4, "--out", out, "--hotness", "reach", "--force")
        src = Source(self.rmat)
        e, n = src.edges[0], src.types[0]["count"]
        rows = np.repeat(np.arange(n), np.diff(e["indptr"]))
        train = src.types[0]["splits"]["train"]
        p = np.bincount(train, minlength=n).astype(np.float64)
        for _ in range(3):
            p = np.bincount(e["indices"], weights=p[rows], minlength=n)
        p /= len(train)
        global_of = np.load(os.path.join(out, "node.node_map.npy"))
        source_of = np.empty(n, np.int64)
        source_of[global_of] = np.arange(n)
        hot = source_of[np.load(os.path.join(out, "node.hot.npy"))]
        self.assertEqual(len(hot), (n + 3) // 4)
        tol = 1e-9 * p.max()
        self.assertTrue((p[hot][:-1] >= p[hot][1:] - tol).all(), "hottest first")
        rest = np.setdiff1d(np.arange(n), hot)
        self.assertGreaterEqual(p[hot].min(), p[rest].max() - tol, "the quarter with the most reach")
        r = run("partition", self.rmat, "--parts", 4, "--out", out + "2", "--hotness", "nope", ok=False)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("hotness", r.stderr)
        d = os.path.join(self.tmp, "typed-hot")
        run("gen", "rmat", "--typed", "--scale", 8, "--dim", 4, "--out", d)
        r = run("partition", d, "--parts", 2, "--out", d + ".parts", "--hotness", "degree", ok=False)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("one node type", r.stderr)

    def test_stream_balance_and_cut_against_random(self):
        d = os.path.join(self.tmp, "rmat-ordered")  # R-MAT without --permute: ids by degree, hubs first
        run("gen", "rmat", "--scale", 11, "--edge-factor", 8, "--dim", 0, "--symmetrize", "--dedup",
            "--drop-self-loops", "--out", d)
        src = Source(d)
        e = src.edges[0]
        dst = np.repeat(np.arange(len(e["indptr"]) - 1), np.diff(e["indptr"]))
        for parts in (4, 16):
            o = self.partition(d, parts)
            for k in ("train", "edges"):
                self.assertLessEqual(o.balance["node"][k], 1.05 + 1e-9, f"{parts} parts: balance of {k}")
            rng = np.random.default_rng(parts)
            random_owner = rng.integers(0, parts, src.types[0]["count"])
            random_cut = float((random_owner[e["indices"]] != random_owner[dst]).mean())
            self.assertLess(o.cut_fraction, 0.9 * random_cut,
                            f"{parts} parts: cut {o.cut_fraction:.3f} not clearly below random {random_cut:.3f}")


def main():
    global ARGS, np
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--featstore", required=True, help="the featstore CLI")
    ARGS, rest = p.parse_known_args()
    if importlib.util.find_spec("numpy") is None:
        print(f"SKIP: {sys.executable} has no numpy (apt-get install python3-numpy)")
        sys.exit(SKIP)
    sys.path.insert(0, os.path.join(ROOT, "client-lib", "python"))
    import numpy
    np = numpy
    prog = unittest.main(argv=[sys.argv[0]] + rest, exit=False, verbosity=2)
    sys.exit(0 if prog.result.wasSuccessful() else 1)


if __name__ == "__main__":
    main()
