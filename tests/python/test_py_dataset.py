#!/usr/bin/python3
"""test_py_dataset.py — ``featstore.write_dataset`` (client-lib/python/featstore/dataset.py)
and the two Cora datasets of examples/cora.py (issue 16, "Ways in").

Small typed datasets written from Python are opened by the C tool
(``featstore info DIR``, which verifies every checksum), and their files are
checked against an independent computation here: each destination's sources
in (time, edge id) order, edge ids, weights and times by position, edge
features by edge id, reverse types holding edge i reversed as their edge i,
int32/int64 indices, the 4096-byte ``.npy`` headers the C writer writes (the
same bytes as ``featstore import``'s) and the XXH3 checksums. Every input
error must raise ValueError naming the type and the problem and leave
nothing behind; an existing destination is kept unless ``force``, and a
failed write keeps the old dataset. Then ``examples/cora.py typed``
and ``link`` (run without libfeatstore.so) are built from tests/data/cora.npz,
their counts checked (2708 papers, 1433 words, 5429 citations, 49216
paper-word edges; 5278 undirected citations split 4488/263/527), the link
splits' negatives checked against the full graph, the output checked to be
reproducible, and ``featstore info`` must open both; ``featstore serve``
serves cora-link (one node type, one edge type) to the Python client.

    /usr/bin/python3 tests/python/test_py_dataset.py --featstore BUILD/cli/featstore --lib BUILD/client-lib/libfeatstore.so

Registered with ctest (tests/python/CMakeLists.txt); reads nothing outside the
repository and writes only to temporary directories. Exits 77 (ctest's skip)
when numpy or xxhash (python3-xxhash) is missing.
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
import unittest

SKIP = 77
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))  # the repository (this is tests/python/)
PYDIR = os.path.join(ROOT, "client-lib", "python")
CORA = os.path.join(ROOT, "tests", "data", "cora.npz")
CORA_SCRIPT = os.path.join(ROOT, "examples", "cora.py")  # makes the typed and link Cora datasets
ARGS = None
# Python run in a child as if no libfeatstore.so existed anywhere (the
# repository's build/ or /usr/lib may hold one): loading it fails.
NO_LIBRARY = ("import ctypes\n"
              "class _NoFeatstore(ctypes.CDLL):\n"
              "    def __init__(self, name, *a, **k):\n"
              "        if name and 'featstore' in str(name):\n"
              "            raise OSError(f'{name}: cannot open shared object file (simulated: no libfeatstore.so)')\n"
              "        super().__init__(name, *a, **k)\n"
              "ctypes.CDLL = _NoFeatstore\n")
np = xxhash = featstore = None  # imported by main(), once the skip check passed


def info(path):
    """`featstore info path` (verifying checksums): (exit status, output)."""
    r = subprocess.run([ARGS.featstore, "info", path], capture_output=True, text=True, timeout=120)
    return r.returncode, r.stdout + r.stderr


def manifest(path):
    with open(os.path.join(path, "manifest.json")) as f:
        return json.load(f)


def edge_entry(m, src, rel, dst):
    for e in m["edge_types"]:
        if (e["src"], e["rel"], e["dst"]) == (src, rel, dst):
            return e
    raise AssertionError(f"no edge type ({src}, {rel}, {dst}) in the manifest")


def load(path, file):
    return np.load(os.path.join(path, file), allow_pickle=False)


def expected_csc(src, dst, num_dst, time=None):
    """The layout rule, computed the slow way: per destination, its edges by (time, edge id)."""
    positions = []
    indptr = [0]
    for d in range(num_dst):
        ids = [i for i in range(len(dst)) if dst[i] == d]
        ids.sort(key=lambda i: (int(time[i]), i) if time is not None else i)
        positions += ids
        indptr.append(len(positions))
    return np.array(indptr), np.array(positions, dtype=np.int64).reshape(-1)


class Scratch(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="featstore-pyds-")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def path(self, name):
        return os.path.join(self.tmp, name)

    def leftovers(self):
        """What a write left in the scratch directory besides the named datasets."""
        return sorted(os.listdir(self.tmp))


# ---- a small typed graph ----------------------------------------------------------------

def small_graph(seed=1):
    rng = np.random.default_rng(seed)
    a_src = rng.integers(0, 7, 20)
    a_dst = rng.integers(0, 5, 20)
    a_src[:3], a_dst[:3] = 2, 4  # parallel edges with tied times: edge id breaks the tie
    a_time = rng.integers(0, 4, 20)
    a_time[:3] = 7
    node_types = {
        "author": {"count": 7, "features": {"x": rng.standard_normal((7, 3)).astype(np.float32),
                                            "h": rng.standard_normal((7, 2)).astype(np.float16)},
                   "labels": np.array([0, 3, -1, 2, 1, -1, 0]), "num_classes": 4, "time": np.arange(7) * 10,
                   "splits": {"train": np.array([0, 1, 3]), "valid": np.array([0, 0, 0, 1, 0, 0, 1], bool)}},
        "paper": {"count": 5, "features": {"emb": rng.standard_normal((5, 4))}},  # float64: stored as float32
        "venue": 3,
    }
    edge_types = {
        ("author", "writes", "paper"): {"edge_index": np.stack([a_src, a_dst]), "time": a_time,
                                        "weights": rng.random(20) * 3,
                                        "features": {"role": rng.standard_normal((20, 2)).astype(np.float32)},
                                        "reverse": "written_by"},
        ("paper", "cites", "paper"): {"edge_index": [[1, 2, 3, 0, 4, 4], [0, 0, 1, 2, 3, 2]]},
        ("paper", "in", "venue"): {"edge_index": np.array([[0, 1, 2, 3], [0, 0, 1, 2]])},  # already sorted
        ("venue", "none", "author"): {"edge_index": np.zeros((2, 0), np.int64)},
    }
    link_splits = {
        "train": {"edge_type": ("author", "writes", "paper"), "src": [0, 1, 2], "dst": [4, 3, 2],
                  "label": [1, 0, 1], "time": [5, 6, 7], "neg_dst": [[0, 1], [1, 2], [3, 4]]},
        "test": {"edge_type": "written_by", "src": [4], "dst": [6]},
    }
    return node_types, edge_types, link_splits


class WriteAndOpen(Scratch):
    """A dataset with every optional part, opened by the C tool and checked file by file."""

    def write_small(self, **kw):
        nt, et, ls = small_graph()
        out = featstore.write_dataset(self.path("g"), nt, et, ls, name="small", **kw)
        return out, nt, et, ls

    def test_featstore_info_opens_it_with_checksums(self):
        out, *_ = self.write_small()
        self.assertEqual(out, self.path("g"))
        self.assertEqual(self.leftovers(), ["g"], "the temporary directory is renamed, nothing else is left")
        rc, text = info(out)
        self.assertEqual(rc, 0, text)
        for line in ("format    version 2: 3 node types, 5 edge types, 2 link splits",
                     "node type author: 7 nodes, timed", "labels: 4 classes, 5 labelled", "split valid: 2 ids",
                     "edge type (author, writes, paper): 20 edges, int32 sources",
                     "reverse: (paper, written_by, author)", "reverse: (author, writes, paper)",
                     "edge type (paper, in, venue): 4 edges, int32 sources, in-degree mean 1.33 max 2\n",
                     "edge type (venue, none, author): 0 edges",
                     "link split train: 3 edges of (author, writes, paper), labelled, timed, 2 given negatives each",
                     "link split test: 1 edges of (paper, written_by, author)", "checksums match"):
            self.assertIn(line, text)

    def test_layout_equals_an_independent_computation(self):
        out, nt, et, _ = self.write_small()
        m = manifest(out)
        self.assertEqual([list(m)[i] for i in range(4)], ["format", "version", "name", "node_types"])
        self.assertEqual(list(m)[-2:], ["source", "files"])
        self.assertEqual([(e["src"], e["rel"], e["dst"]) for e in m["edge_types"]],
                         [("author", "writes", "paper"), ("paper", "written_by", "author"),
                          ("paper", "cites", "paper"), ("paper", "in", "venue"), ("venue", "none", "author")],
                         "given order, each reverse right after its type")
        counts = {t["name"]: t["count"] for t in m["node_types"]}
        for key, spec in et.items():
            ei = np.asarray(spec["edge_index"])
            time = spec.get("time")
            w = spec.get("weights")
            variants = [(key, ei[0], ei[1])]
            if spec.get("reverse"):
                variants.append(((key[2], spec["reverse"], key[0]), ei[1], ei[0]))
            for (s, r, d), src, dst in variants:
                with self.subTest(edge_type=(s, r, d)):
                    e = edge_entry(m, s, r, d)
                    indptr, pos = expected_csc(src, dst, counts[d], time)
                    np.testing.assert_array_equal(load(out, e["indptr"]), indptr)
                    self.assertEqual(load(out, e["indptr"]).dtype, np.dtype("<i8"))
                    ind = load(out, e["indices"])
                    self.assertEqual(ind.dtype, np.dtype("<i4"))
                    np.testing.assert_array_equal(ind, src[pos])
                    if "edge_ids" in e:
                        np.testing.assert_array_equal(load(out, e["edge_ids"]), pos)
                        self.assertFalse(np.array_equal(pos, np.arange(len(pos))))
                    else:
                        np.testing.assert_array_equal(pos, np.arange(len(pos)), "edge_ids left out only if identity")
                    if w is not None:
                        np.testing.assert_array_equal(load(out, e["weights"]), np.float32(w)[pos])
                    else:
                        self.assertNotIn("weights", e)
                    if time is not None:
                        np.testing.assert_array_equal(load(out, e["time"]), time[pos])
                    if spec.get("features"):
                        f = load(out, e["features"]["role"]["file"])
                        np.testing.assert_array_equal(f, spec["features"]["role"], "rows by edge id, as given")
        # the tie: edges 0, 1, 2 are author 2 -> paper 4 at time 7; stored in edge-id order
        e = edge_entry(m, "author", "writes", "paper")
        ids = load(out, e["edge_ids"])[load(out, e["indptr"])[4]:]
        self.assertEqual([i for i in ids if i < 3], [0, 1, 2])

    def test_times_of_any_span(self):
        """Times far apart (the layout's lexsort path) order like close ones."""
        rng = np.random.default_rng(3)
        src, dst = rng.integers(0, 4, 40), rng.integers(0, 3, 40)
        for span in ("close", "huge"):
            t = rng.integers(-5, 5, 40)
            if span == "huge":
                t = t * (2 ** 60)
            out = featstore.write_dataset(self.path(span), {"v": 4}, {("v", "e", "v"): {"edge_index": [src, dst],
                                                                                         "time": t}})
            e = manifest(out)["edge_types"][0]
            indptr, pos = expected_csc(src, dst, 4, t)
            np.testing.assert_array_equal(load(out, e["edge_ids"]), pos, span)
            np.testing.assert_array_equal(load(out, e["time"]), t[pos], span)
            self.assertEqual(info(out)[0], 0)

    def test_reverse_holds_edge_i_reversed_as_its_edge_i(self):
        out, _, et, _ = self.write_small()
        m = manifest(out)
        fwd, rev = edge_entry(m, "author", "writes", "paper"), edge_entry(m, "paper", "written_by", "author")
        self.assertEqual((fwd["reverse"], rev["reverse"]), ("written_by", "writes"))
        self.assertEqual(fwd["num_edges"], rev["num_edges"])

        def edges(e, n_dst):
            """edge id -> (src, dst, time, weight) read back from the files."""
            ip, ind = load(out, e["indptr"]), load(out, e["indices"])
            ids = load(out, e["edge_ids"]) if "edge_ids" in e else np.arange(len(ind))
            t, w = load(out, e["time"]), load(out, e["weights"])
            res = {}
            for d in range(n_dst):
                for p in range(ip[d], ip[d + 1]):
                    res[int(ids[p])] = (int(ind[p]), d, int(t[p]), float(w[p]))
            return res

        f, r = edges(fwd, 5), edges(rev, 7)
        self.assertEqual(sorted(f), list(range(20)))
        for i in range(20):
            self.assertEqual(r[i], (f[i][1], f[i][0], f[i][2], f[i][3]), f"edge {i}")
        self.assertEqual(fwd["features"], rev["features"], "edge features are by id: one file serves both")

    def test_nodes_splits_links_and_dtypes(self):
        out, nt, _, ls = self.write_small()
        m = manifest(out)
        a, p, v = m["node_types"]
        self.assertEqual((a["name"], p["name"], v["name"]), ("author", "paper", "venue"))
        self.assertEqual(v, {"name": "venue", "count": 3}, "a count alone is a featureless type")
        self.assertEqual(a["features"]["h"]["dtype"], "float16")
        self.assertEqual(load(out, a["features"]["h"]["file"]).dtype, np.dtype("<f2"))
        self.assertEqual(p["features"]["emb"]["dtype"], "float32")
        np.testing.assert_array_equal(load(out, p["features"]["emb"]["file"]),
                                      nt["paper"]["features"]["emb"].astype(np.float32))
        self.assertEqual(a["labels"]["num_classes"], 4)
        np.testing.assert_array_equal(load(out, a["labels"]["file"]), nt["author"]["labels"])
        np.testing.assert_array_equal(load(out, a["time"]), np.arange(7) * 10)
        np.testing.assert_array_equal(load(out, a["splits"]["valid"]), [3, 6], "a boolean mask becomes ids")
        for f in [a["splits"]["train"], a["labels"]["file"], a["time"]]:
            self.assertEqual(load(out, f).dtype, np.dtype("<i8"))
        tr = m["link_splits"]["train"]
        self.assertEqual(tr["edge_type"], ["author", "writes", "paper"])
        np.testing.assert_array_equal(load(out, tr["neg_dst"]), [[0, 1], [1, 2], [3, 4]])
        self.assertEqual(m["link_splits"]["test"]["edge_type"], ["paper", "written_by", "author"],
                         "a relation name resolves to its edge type")
        self.assertEqual(m["name"], "small")
        self.assertEqual(m["source"]["writer"], "featstore.write_dataset")

    def test_files_headers_and_checksums(self):
        out, *_ = self.write_small()
        m = manifest(out)
        names = sorted(f for f in os.listdir(out) if f != "manifest.json")
        self.assertEqual(sorted(m["files"]), names, "every file is listed, and only those")
        for f, entry in m["files"].items():
            with open(os.path.join(out, f), "rb") as fh:
                data = fh.read()
            self.assertEqual(entry["bytes"], len(data), f)
            self.assertRegex(entry["xxh3"], r"\A[0-9a-f]{16}\Z")
            self.assertEqual(entry["xxh3"], "%016x" % xxhash.xxh3_64_intdigest(data), f)
            self.assertEqual(data[:8], b"\x93NUMPY\x01\x00")
            self.assertEqual(int.from_bytes(data[8:10], "little") + 10, 4096, f"{f}: the C writer's 4096-byte header")
            self.assertEqual(data[4095:4096], b"\n")

    def test_headers_are_the_c_writers_bytes(self):
        """`featstore import npz` writes labels int64 [2708] and feat float32 [2708, 1433]: same headers."""
        c_out = self.path("c")
        subprocess.run([ARGS.featstore, "import", "npz", CORA, "--out", c_out], check=True, capture_output=True,
                       timeout=120)
        py = featstore.write_dataset(self.path("py"), {"node": {
            "labels": np.zeros(2708, np.int64), "features": {"feat": np.zeros((2708, 1433), np.float32)}}})
        m = manifest(py)
        pairs = [("labels.npy", m["node_types"][0]["labels"]["file"]),
                 ("table_feat.npy", m["node_types"][0]["features"]["feat"]["file"])]
        for c_file, py_file in pairs:
            with open(os.path.join(c_out, c_file), "rb") as a, open(os.path.join(py, py_file), "rb") as b:
                self.assertEqual(a.read(128), b.read(128), c_file)

    def test_int64_indices_when_the_source_type_has_2_31_nodes(self):
        out = featstore.write_dataset(self.path("big"), {"big": 2 ** 31, "small": 3, "mid": 2 ** 31 - 1},
                                      {("big", "to", "small"): {"edge_index": [[2 ** 31 - 1, 0], [0, 2]]},
                                       ("mid", "to", "small"): {"edge_index": [[2 ** 31 - 2], [1]]}})
        m = manifest(out)
        self.assertEqual(load(out, edge_entry(m, "big", "to", "small")["indices"]).dtype, np.dtype("<i8"))
        self.assertEqual(load(out, edge_entry(m, "mid", "to", "small")["indices"]).dtype, np.dtype("<i4"))
        np.testing.assert_array_equal(load(out, edge_entry(m, "big", "to", "small")["indices"]), [2 ** 31 - 1, 0])
        rc, text = info(out)
        self.assertEqual(rc, 0, text)
        self.assertIn("edge type (big, to, small): 2 edges, int64 sources", text)

    def test_one_node_type_and_one_edge_type_is_a_homogeneous_graph(self):
        out = featstore.write_dataset(self.path("h"), {"v": {"count": 4, "features": {"feat": np.eye(4)}}},
                                      {("v", "to", "v"): {"edge_index": [[0, 1, 2, 3], [1, 2, 3, 0]],
                                                          "weights": [1, 2, 3, 4]}})
        rc, text = info(out)
        self.assertEqual(rc, 0, text)
        self.assertIn("format    version 2: node type v, edge type (v, to, v)", text)
        self.assertIn("edges     4  (directed as stored, int32 indices, weighted)", text)

    def test_long_names_fall_back_to_short_file_names(self):
        """File names stay under the format's 128 characters whatever the type and table names."""
        t, r, f = "t" * 63, "r" * 63, "f" * 63
        out = featstore.write_dataset(self.path("long"), {t: {"count": 2, "features": {f: np.ones((2, 1), np.float32)}},
                                                          "u": 0},
                                      {(t, r, t): {"edge_index": [[1, 0], [0, 0]], "features": {f: np.ones((2, 1))},
                                                   "reverse": "s" * 63}},
                                      {"x" * 63: {"edge_type": (t, r, t), "src": [0], "dst": [0]}})
        m = manifest(out)
        self.assertTrue(all(len(name) < 128 for name in m["files"]), sorted(m["files"]))
        self.assertEqual(m["node_types"][0]["features"][f]["file"], "node0.f0.npy")
        self.assertEqual(edge_entry(m, t, r, t)["indptr"], "edge0.indptr.npy")
        self.assertEqual(m["node_types"][1], {"name": "u", "count": 0})
        rc, text = info(out)
        self.assertEqual(rc, 0, text)
        self.assertIn("node type u: 0 nodes", text)

    def test_nodes_only(self):
        out = featstore.write_dataset(self.path("n"), {"a": {"features": {"x": np.zeros((3, 2), np.float32)}}})
        self.assertEqual(manifest(out)["edge_types"], [])
        rc, text = info(out)
        self.assertEqual(rc, 0, text)
        self.assertIn("1 node types, 0 edge types", text)
        self.assertIn("node type a: 3 nodes", text, "the count comes from the table when not given")

    def test_no_compiled_library_needed(self):
        code = (NO_LIBRARY + "import featstore, numpy as np, sys\n"
                "featstore.write_dataset(sys.argv[1], {'n': 2}, {('n', 'e', 'n'): {'edge_index': [[0], [1]]}})\n"
                "try:\n    featstore.connect\nexcept OSError as e:\n    print('no library:', e)\n")
        env = dict(os.environ, PYTHONPATH=PYDIR)
        r = subprocess.run([sys.executable, "-c", code, self.path("n")], env=env, capture_output=True, text=True,
                           timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("no library:", r.stdout)
        self.assertIn("simulated: no libfeatstore.so", r.stdout, "the client's names still say why they cannot load")
        self.assertEqual(info(self.path("n"))[0], 0)


class Undirected(Scratch):
    """undirected=True: recorded as "symmetric", reported by featstore info
    (and so by Client.info() and propagate), checked, never made up."""

    E = ("v", "to", "v")

    def write(self, name, edges, **kw):
        return featstore.write_dataset(self.path(name), {"v": 4}, {self.E: edges}, **kw)

    def test_symmetric_edges_are_reported_undirected(self):
        both = {"edge_index": [[0, 1, 1, 2, 3, 3], [1, 0, 2, 1, 3, 3]], "weights": [2, 2, 1, 1, 5, 5]}
        out = self.write("u", both, undirected=True)  # parallel self-loops pair up with each other
        self.assertTrue(edge_entry(manifest(out), *self.E)["symmetric"])
        rc, text = info(out)
        self.assertEqual(rc, 0, text)
        self.assertIn("edges     6  (undirected, int32 indices, weighted)", text)
        out = self.write("d", both)  # not said: directed, as before
        self.assertNotIn("symmetric", edge_entry(manifest(out), *self.E))
        self.assertIn("(directed as stored,", info(out)[1])
        out = self.write("k", {**both, "undirected": True})  # said per edge type
        self.assertIn("(undirected,", info(out)[1])

    def test_edges_that_are_not_symmetric_are_refused_by_name(self):
        cases = [({"edge_index": [[0, 1, 2], [1, 0, 3]]}, "edge 2 (2 -> 3) has no reverse (3 -> 2)"),
                 ({"edge_index": [[0, 0, 1], [1, 1, 0]]}, "edge 1 (0 -> 1) has no reverse (1 -> 0)"),  # twice, once
                 ({"edge_index": [[0, 1], [1, 0]], "weights": [1, 2]},
                  "edge 0 (0 -> 1 weight 1.0) has no reverse (1 -> 0 with the same weight)"),
                 ({"edge_index": [[2, 1, 1], [1, 2, 0]], "undirected": True}, "edge 2 (1 -> 0) has no reverse")]
        for edges, needle in cases:
            with self.subTest(edges=edges):
                with self.assertRaises(ValueError) as cm:
                    self.write("bad", edges, undirected=True)
                self.assertIn("edge type (v, to, v): undirected, but " + needle, str(cm.exception))
                self.assertIn("to_undirected", str(cm.exception))
                self.assertEqual(self.leftovers(), [], "nothing is written")

    def test_between_two_node_types_the_other_direction_is_a_reverse(self):
        nt = {"a": 2, "b": 2}
        with self.assertRaisesRegex(ValueError, r"\(a, to, b\) joins two node types and has no \"reverse\""):
            featstore.write_dataset(self.path("x"), nt, {("a", "to", "b"): {"edge_index": [[0], [1]]}}, undirected=True)
        with self.assertRaisesRegex(ValueError, r"\(a, to, b\) joins two node types, so it cannot be undirected"):
            featstore.write_dataset(self.path("x"), nt, {("a", "to", "b"): {"edge_index": [[0], [1]],
                                                                            "undirected": True}})
        with self.assertRaisesRegex(ValueError, "\"undirected\" must be True or False"):
            self.write("x", {"edge_index": [[0], [0]], "undirected": "yes"})
        edges = {("a", "to", "b"): {"edge_index": [[0], [1]], "reverse": "ot"},
                 ("a", "near", "a"): {"edge_index": [[0, 1], [1, 0]]}}
        out = featstore.write_dataset(self.path("r"), nt, edges, undirected=True)
        m = manifest(out)
        self.assertEqual([e.get("symmetric", False) for e in m["edge_types"]], [False, False, True])
        rc, text = info(out)
        self.assertEqual(rc, 0, text)
        self.assertIn("edge type (a, near, a): 2 edges, int32 sources, in-degree mean 1.00 max 1, undirected", text)

    def test_the_reader_checks_the_word(self):
        out = featstore.write_dataset(self.path("r"), {"a": 2, "b": 2}, {("a", "to", "b"): {"edge_index": [[0], [1]]}})
        m = manifest(out)
        for value, needle in ((True, "is \"symmetric\" but joins two node types"),
                              ("yes", "\"symmetric\" must be true or false")):
            m["edge_types"][0]["symmetric"] = value
            with open(os.path.join(out, "manifest.json"), "w") as f:
                json.dump(m, f)
            rc, text = info(out)
            self.assertEqual(rc, 1, text)
            self.assertIn("edge type (a, to, b)", text)
            self.assertIn(needle, text)


class Destination(Scratch):
    def tiny(self, out, force=False, n=2):
        return featstore.write_dataset(out, {"n": n}, {("n", "e", "n"): {"edge_index": [[0], [1]]}}, force=force)

    def test_existing_directory_needs_force(self):
        out = self.tiny(self.path("d"))
        with self.assertRaisesRegex(FileExistsError, "already exists"):
            self.tiny(out, n=3)
        self.assertEqual(manifest(out)["node_types"][0]["count"], 2)
        self.tiny(out, force=True, n=3)
        self.assertEqual(manifest(out)["node_types"][0]["count"], 3)
        self.assertEqual(self.leftovers(), ["d"], "the old dataset is removed, nothing else is left")
        self.assertEqual(info(out)[0], 0)

    def test_force_never_replaces_what_is_not_a_dataset(self):
        os.mkdir(self.path("home"))
        open(self.path("home/precious.txt"), "w").close()
        with self.assertRaisesRegex(FileExistsError, "is not a featstore dataset"):
            self.tiny(self.path("home"), force=True)
        open(self.path("file"), "w").close()
        with self.assertRaisesRegex(FileExistsError, "is not a featstore dataset"):
            self.tiny(self.path("file"), force=True)
        self.assertTrue(os.path.exists(self.path("home/precious.txt")))

    def test_missing_parent(self):
        with self.assertRaisesRegex(FileNotFoundError, "no such directory"):
            self.tiny(self.path("no/such/d"))

    def test_a_failed_write_leaves_nothing_and_keeps_the_old_dataset(self):
        out = self.tiny(self.path("d"))
        real = featstore.dataset._write_file
        calls = []

        def failing(path, array, xxh3):
            calls.append(path)
            if len(calls) == 2:
                raise OSError(28, "No space left on device (simulated)")
            return real(path, array, xxh3)

        featstore.dataset._write_file = failing
        try:
            with self.assertRaisesRegex(OSError, "simulated"):
                self.tiny(out, force=True, n=5)
            calls.clear()
            with self.assertRaisesRegex(OSError, "simulated"):
                self.tiny(self.path("new"))
        finally:
            featstore.dataset._write_file = real
        self.assertEqual(self.leftovers(), ["d"])
        self.assertEqual(manifest(out)["node_types"][0]["count"], 2)
        self.assertEqual(info(out)[0], 0)


class Errors(Scratch):
    """Every bad input: ValueError naming the type and the problem; nothing written."""

    def check(self, needles, node_types=None, edge_types=None, link_splits=None, **kw):
        nt, et, ls = small_graph()
        args = dict(node_types=nt if node_types is None else node_types(nt),
                    edge_types=et if edge_types is None else edge_types(et),
                    link_splits=ls if link_splits is None else link_splits(ls))
        with self.assertRaises(ValueError) as cm:
            featstore.write_dataset(self.path("bad"), **args, **kw)
        msg = str(cm.exception)
        for needle in needles:
            self.assertIn(needle, msg)
        self.assertEqual(self.leftovers(), [], "nothing is written for bad input")
        return msg

    @staticmethod
    def put(d, key, value, sub=None):
        d = dict(d)
        if sub is None:
            d[key] = value
        else:
            d[sub] = {k: v for k, v in d[sub].items() if k != key}
            if value is not None:
                d[sub][key] = value
        return d

    W = ("author", "writes", "paper")

    def test_names(self):
        self.check(["node type 'pa-per' is not a valid name", "[A-Za-z0-9_]"],
                   node_types=lambda nt: dict(nt, **{"pa-per": 2}))
        self.check(["node type '" + "x" * 64 + "' is not a valid name", "1 to 63"],
                   node_types=lambda nt: dict(nt, **{"x" * 64: 2}))
        self.check(["edge type ('paper', 'ci tes', 'paper'): relation 'ci tes' is not a valid name"],
                   edge_types=lambda et: {**et, ("paper", "ci tes", "paper"): {"edge_index": [[0], [0]]}})
        self.check(["edge type 'cites' must be a (src, rel, dst) tuple"],
                   edge_types=lambda et: dict(et, cites={"edge_index": [[0], [0]]}))
        self.check(["node type 'author': feature table 'x.y' is not a valid name"],
                   node_types=lambda nt: self.put(nt, "features", {"x.y": np.zeros((7, 1), np.float32)}, "author"))
        self.check(["node type 'author': split '' is not a valid name"],
                   node_types=lambda nt: self.put(nt, "splits", {"": [0]}, "author"))
        self.check(["link split 'te-st' is not a valid name"], link_splits=lambda ls: {"te-st": ls["test"]})
        self.check(["edge type (author, writes, paper): \"reverse\" 'by/' is not a valid name"],
                   edge_types=lambda et: self.put(et, "reverse", "by/", self.W))
        self.check(["name '' must be a string of 1 to 127 bytes"], name="")
        self.check(["node type 'author': feature table name 'labels' is reserved for the labels"],
                   node_types=lambda nt: self.put(nt, "features", {"labels": np.zeros((7, 1), np.float32)}, "author"))

    def test_node_types(self):
        self.check(["node_types must be a dict of 1 to 4096"], node_types=lambda nt: {})
        self.check(["node type 'venue': \"count\" must be an integer, got -1.5"],
                   node_types=lambda nt: dict(nt, venue=-1.5))
        self.check(["node type 'venue': \"count\" -1 is out of range"], node_types=lambda nt: dict(nt, venue=-1))
        self.check(["node type 'venue': needs \"count\""], node_types=lambda nt: dict(nt, venue={}))
        self.check(["node type 'author': unknown key(s) 'feature'", "allowed: count, features"],
                   node_types=lambda nt: self.put(nt, "feature", {}, "author"))
        self.check(["node type 'paper': feature table 'emb' has 4 rows, expected 5"],
                   node_types=lambda nt: self.put(nt, "features", {"emb": np.zeros((4, 2))}, "paper"))
        self.check(["node type 'paper': feature table 'emb' must be float32 or float16", "got dtype int64",
                    ".astype(np.float32)"],
                   node_types=lambda nt: self.put(nt, "features", {"emb": np.zeros((5, 2), np.int64)}, "paper"))
        self.check(["node type 'paper': feature table 'emb' must be 2-dimensional", "reshape(-1, 1)"],
                   node_types=lambda nt: self.put(nt, "features", {"emb": np.zeros(5, np.float32)}, "paper"))
        self.check(["node type 'author': label at offset 1 is 4, outside [-1, 4)", "num_classes 4"],
                   node_types=lambda nt: self.put(nt, "labels", [0, 4, 0, 0, 0, 0, 0], "author"))
        self.check(["node type 'author': label at offset 0 is -2, outside [-1, 4)"],
                   node_types=lambda nt: self.put(nt, "labels", [-2, 0, 0, 0, 0, 0, 0], "author"))
        self.check(["node type 'author': \"labels\" must be integers, got dtype float64"],
                   node_types=lambda nt: self.put(nt, "labels", np.zeros(7), "author"))
        self.check(["node type 'author': \"labels\" has 6 entries, expected 7"],
                   node_types=lambda nt: self.put(nt, "labels", np.zeros(6, int), "author"))
        self.check(["node type 'paper': \"num_classes\" without \"labels\""],
                   node_types=lambda nt: self.put(nt, "num_classes", 3, "paper"))
        self.check(["node type 'author': \"num_classes\" must be a non-negative integer"],
                   node_types=lambda nt: self.put(nt, "num_classes", -1, "author"))
        self.check(["node type 'author': \"time\" must be integers, got dtype float64"],
                   node_types=lambda nt: self.put(nt, "time", np.zeros(7), "author"))
        self.check(["node type 'author': split 'train' node id at offset 1 is 7, outside [0, 7)", "7 nodes"],
                   node_types=lambda nt: self.put(nt, "splits", {"train": [0, 7]}, "author"))
        self.check(["node type 'author': split 'valid' is a boolean mask of shape (6,), expected (7,)"],
                   node_types=lambda nt: self.put(nt, "splits", {"valid": np.ones(6, bool)}, "author"))

    def test_edge_types(self):
        W = self.W
        self.check(["edge type (paper, by, venues) names node type 'venues', which is not in node_types"],
                   edge_types=lambda et: {**et, ("paper", "by", "venues"): {"edge_index": [[0], [0]]}})
        self.check(["edge type (author, writes, paper): needs \"edge_index\""],
                   edge_types=lambda et: self.put(et, "edge_index", None, W))
        self.check(["edge type (author, writes, paper): \"edge_index\" must have shape [2, E]", "got (3, 2)"],
                   edge_types=lambda et: self.put(et, "edge_index", np.zeros((3, 2), int), W))
        self.check(["edge type (paper, cites, paper): \"edge_index\" must be integers, got dtype float64"],
                   edge_types=lambda et: self.put(et, "edge_index", [[0.0, 1.0], [1.0, 0.0]],
                                                  ("paper", "cites", "paper")))
        self.check(["edge type (paper, cites, paper): \"edge_index\" must be integers, got dtype bool"],
                   edge_types=lambda et: self.put(et, "edge_index", [[True], [False]], ("paper", "cites", "paper")))
        self.check(["edge type (paper, cites, paper): source id at offset 1 is 5, outside [0, 5)",
                    "node type 'paper' has 5 nodes"],
                   edge_types=lambda et: self.put(et, "edge_index", [[0, 5], [1, 1]], ("paper", "cites", "paper")))
        self.check(["edge type (paper, in, venue): destination id at offset 0 is -1, outside [0, 3)"],
                   edge_types=lambda et: self.put(et, "edge_index", [[0], [-1]], ("paper", "in", "venue")))
        self.check(["edge type (author, writes, paper): \"weights\" must have shape (20,), one per edge, got (19,)"],
                   edge_types=lambda et: self.put(et, "weights", np.ones(19), W))
        self.check(["edge type (author, writes, paper): edge weight 3 is nan", "finite and >= 0"],
                   edge_types=lambda et: self.put(et, "weights", np.r_[np.ones(3), np.nan, np.ones(16)], W))
        self.check(["edge type (author, writes, paper): edge weight 0 is -1.0", "finite and >= 0"],
                   edge_types=lambda et: self.put(et, "weights", np.r_[-1, np.ones(19)], W))
        self.check(["edge type (author, writes, paper): edge weight 19 is inf (as float32)"],
                   edge_types=lambda et: self.put(et, "weights", np.r_[np.ones(19), 1e300], W))
        self.check(["edge type (author, writes, paper): \"time\" gives 12 times for 20 edges",
                    "times must be given for every edge or for none"],
                   edge_types=lambda et: self.put(et, "time", np.arange(12), W))
        self.check(["edge type (author, writes, paper): \"time\" must be integers, got dtype float64"],
                   edge_types=lambda et: self.put(et, "time", np.r_[np.arange(19), np.nan], W))
        self.check(["edge type (author, writes, paper): feature table 'role' has 3 rows, expected 20"],
                   edge_types=lambda et: self.put(et, "features", {"role": np.zeros((3, 1), np.float32)}, W))
        self.check(["edge type (author, writes, paper): feature table 'role' must be float32 or float16",
                    "got dtype bool"],
                   edge_types=lambda et: self.put(et, "features", {"role": np.zeros((20, 1), bool)}, W))
        self.check(["edge type (author, writes, paper): unknown key(s) 'weight'"],
                   edge_types=lambda et: self.put(et, "weight", np.ones(20), W))
        self.check(["edge type (paper, cites, paper): \"reverse\" 'cites' names the edge type itself"],
                   edge_types=lambda et: self.put(et, "reverse", "cites", ("paper", "cites", "paper")))
        self.check(["edge type (paper, cites, paper): its reverse edge type (paper, cited_by, paper) is also given"],
                   edge_types=lambda et: {**self.put(et, "reverse", "cited_by", ("paper", "cites", "paper")),
                                          ("paper", "cited_by", "paper"): {"edge_index": [[0], [1]]}})
        self.check(["edge type (author, wrote, paper) is listed twice"],
                   edge_types=lambda et: {**et, ("paper", "by", "author"): {"edge_index": [[0], [1]],
                                                                            "reverse": "wrote"},
                                          ("paper", "by2", "author"): {"edge_index": [[0], [1]],
                                                                       "reverse": "wrote"}})
        self.check(["edge type (author, writes, paper): \"edge_index\" is not a numeric array"],
                   edge_types=lambda et: self.put(et, "edge_index", [["a"], [None]], W))

    def test_link_splits(self):
        self.check(["link split 'test' names edge type (paper, cites, author), which is not in edge_types"],
                   link_splits=lambda ls: dict(ls, test=dict(ls["test"], edge_type=("paper", "cites", "author"))))
        self.check(["link split 'test': \"edge_type\" 'nope' names 0 edge types"],
                   link_splits=lambda ls: dict(ls, test=dict(ls["test"], edge_type="nope")))
        self.check(["link split 'test': needs \"dst\""],
                   link_splits=lambda ls: dict(ls, test={"edge_type": self.W, "src": [0]}))
        self.check(["link split 'train': \"dst\" has 2 entries, expected 3"],
                   link_splits=lambda ls: dict(ls, train=dict(ls["train"], dst=[0, 1])))
        self.check(["link split 'train': \"src\" at offset 2 is 7, outside [0, 7)", "node type 'author' has 7 nodes"],
                   link_splits=lambda ls: dict(ls, train=dict(ls["train"], src=[0, 1, 7])))
        self.check(["link split 'train': \"neg_dst\" must be [k, m]", "reshape(-1, 1)"],
                   link_splits=lambda ls: dict(ls, train=dict(ls["train"], neg_dst=[0, 1, 2])))
        self.check(["link split 'train': \"neg_dst\" at (2, 1) is 5, outside [0, 5)", "node type 'paper' has 5 nodes"],
                   link_splits=lambda ls: dict(ls, train=dict(ls["train"], neg_dst=[[0, 1], [1, 2], [3, 5]])))
        self.check(["link split 'train': \"label\" must be integers, got dtype float64"],
                   link_splits=lambda ls: dict(ls, train=dict(ls["train"], label=[1.0, 0.0, 1.0])))
        self.check(["link split 'train': \"time\" has 1 entries, expected 3"],
                   link_splits=lambda ls: dict(ls, train=dict(ls["train"], time=[1])))
        self.check(["link split 'train': unknown key(s) 'negatives'"],
                   link_splits=lambda ls: dict(ls, train=dict(ls["train"], negatives=[[1]])))

    def test_source_must_be_json(self):
        self.check(["source must be a dict"], source=["a"])
        self.check(["must be JSON-serialisable"], source={"a": {1, 2}})


# ---- Cora --------------------------------------------------------------------------------

class Cora(Scratch):
    def make(self, *args):
        """examples/cora.py ARGS, without libfeatstore.so."""
        code = NO_LIBRARY + (f"import runpy, sys\nsys.argv[0] = {CORA_SCRIPT!r}\n"
                             f"runpy.run_path({CORA_SCRIPT!r}, run_name='__main__')\n")
        r = subprocess.run([sys.executable, "-c", code, *args, "--npz", CORA], env=dict(os.environ, PYTHONPATH=PYDIR),
                           capture_output=True, text=True, timeout=300)
        self.assertEqual(r.returncode, 0, r.stderr)

    def npz(self):
        with np.load(CORA, allow_pickle=False) as z:
            return {k: z[k] for k in ("adj_indptr", "adj_indices", "attr_indptr", "attr_indices", "attr_data",
                                      "labels")}

    def test_typed(self):
        out = self.path("typed")
        self.make("typed", out)
        rc, text = info(out)
        self.assertEqual(rc, 0, text)
        for line in ("name      cora-typed", "2 node types, 4 edge types", "node type paper: 2708 nodes",
                     "labels: 7 classes, 2708 labelled", "feat         float32  [2708 x 1433]",
                     "split train: 140 ids", "split valid: 500 ids", "split test: 1000 ids",
                     "node type word: 1433 nodes",
                     "edge type (paper, cites, paper): 5429 edges, int32 sources, in-degree mean 2.00 max 166\n",
                     "reverse: (paper, cited_by, paper)",
                     "edge type (paper, cited_by, paper): 5429 edges, int32 sources, in-degree mean 2.00 max 5, "
                     "edge ids",
                     "edge type (paper, has, word): 49216 edges, int32 sources, in-degree mean 34.34 max 1083, "
                     "edge ids, weighted", "reverse: (word, in, paper)", "edge type (word, in, paper): 49216 edges",
                     "checksums match"):
            self.assertIn(line, text)
        z, m = self.npz(), manifest(out)
        # cites: the npz's row r lists the papers citing r; stored toward the cited paper, in entry order
        cites = edge_entry(m, "paper", "cites", "paper")
        np.testing.assert_array_equal(load(out, cites["indptr"]), z["adj_indptr"])
        np.testing.assert_array_equal(load(out, cites["indices"]), z["adj_indices"])
        self.assertNotIn("edge_ids", cites, "the npz's entries are already by cited paper")
        rows = np.repeat(np.arange(2708), np.diff(z["adj_indptr"]))
        by = edge_entry(m, "paper", "cited_by", "paper")
        ip, ind, ids = load(out, by["indptr"]), load(out, by["indices"]), load(out, by["edge_ids"])
        dst = np.repeat(np.arange(2708), np.diff(ip))
        np.testing.assert_array_equal(z["adj_indices"][ids], dst, "cited_by edge i: the citing paper is its dst")
        np.testing.assert_array_equal(rows[ids], ind)
        has = edge_entry(m, "paper", "has", "word")
        ids = load(out, has["edge_ids"])
        papers = np.repeat(np.arange(2708), np.diff(z["attr_indptr"]))
        np.testing.assert_array_equal(load(out, has["indices"]), papers[ids])
        np.testing.assert_array_equal(np.repeat(np.arange(1433), np.diff(load(out, has["indptr"]))),
                                      z["attr_indices"][ids])
        np.testing.assert_array_equal(load(out, has["weights"]), z["attr_data"][ids].astype(np.float32))
        paper = m["node_types"][0]
        x = load(out, paper["features"]["feat"]["file"])
        self.assertEqual(float(x.sum()), float(z["attr_data"].sum()))
        np.testing.assert_array_equal(load(out, paper["labels"]["file"]), z["labels"])
        sp = {k: load(out, f) for k, f in paper["splits"].items()}
        self.assertEqual(len(np.unique(np.concatenate(list(sp.values())))), 1640, "the splits are disjoint")
        np.testing.assert_array_equal(np.bincount(z["labels"][sp["train"]]), [20] * 7)
        self.assertEqual(m["node_types"][1], {"name": "word", "count": 1433})

    def test_link(self):
        out = self.path("link")
        self.make("link", out, "--seed", "0")
        rc, text = info(out)
        self.assertEqual(rc, 0, text)
        for line in ("name      cora-link", "format    version 2: node type paper, edge type (paper, cites, paper)",
                     "nodes     2708", "edges     8976  (undirected, int32 indices)", "checksums match"):
            self.assertIn(line, text)
        z, m = self.npz(), manifest(out)
        n = 2708
        rows = np.repeat(np.arange(n), np.diff(z["adj_indptr"]))
        all_pairs = {(min(a, b), max(a, b)) for a, b in zip(rows.tolist(), z["adj_indices"].tolist())}
        self.assertEqual(len(all_pairs), 5278)
        ls = m["link_splits"]
        pos = {k: list(zip(load(out, ls[k]["src"]).tolist(), load(out, ls[k]["dst"]).tolist())) for k in ls}
        self.assertEqual({k: len(v) for k, v in pos.items()}, {"train": 4488, "valid": 263, "test": 527})
        und = {k: {(min(a, b), max(a, b)) for a, b in v} for k, v in pos.items()}
        self.assertEqual(sum(len(v) for v in und.values()), 5278, "each undirected edge in one split, once")
        self.assertEqual(und["train"] | und["valid"] | und["test"], all_pairs)
        self.assertNotIn("neg_dst", ls["train"], "train negatives are sampled by the trainer")
        e = edge_entry(m, "paper", "cites", "paper")
        ip, ind = load(out, e["indptr"]), load(out, e["indices"])
        dst = np.repeat(np.arange(n), np.diff(ip))
        stored = sorted(zip(ind.tolist(), dst.tolist()))
        self.assertEqual(stored, sorted(pos["train"] + [(b, a) for a, b in pos["train"]]),
                         "the topology is the train edges, both ways, and nothing else")
        ids = load(out, e["edge_ids"])
        t = np.array(pos["train"])
        np.testing.assert_array_equal(ind, np.r_[t[:, 0], t[:, 1]][ids], "edge i and i + 4488: train edge i")
        negs = set()
        for k in ("valid", "test"):
            neg = load(out, ls[k]["neg_dst"])
            self.assertEqual(neg.shape, (len(pos[k]), 1))
            for (s, _), row in zip(pos[k], neg.tolist()):
                for w in row:
                    self.assertNotEqual(s, w, "no self-loop negatives")
                    pair = (min(s, w), max(s, w))
                    self.assertNotIn(pair, all_pairs, "a negative is never an edge")
                    self.assertNotIn(pair, negs, "no negative pair twice")
                    negs.add(pair)
        paper = m["node_types"][0]
        self.assertEqual(list(paper), ["name", "count", "features", "labels"])

    def test_seeded_and_reproducible(self):
        for i, seed in enumerate(("0", "0", "1")):
            self.make("link", self.path(f"l{i}"), "--seed", seed, "--neg", "3")
        files = [manifest(self.path(f"l{i}"))["files"] for i in range(3)]
        self.assertEqual(files[0], files[1], "the same seed gives byte-identical files")
        self.assertNotEqual(files[0]["link.test.src.npy"], files[2]["link.test.src.npy"])
        self.assertEqual(load(self.path("l0"), "link.valid.neg_dst.npy").shape, (263, 3))
        self.make("typed", self.path("t0"), "--split", "60,20,20", "--seed", "4")
        sp = manifest(self.path("t0"))["node_types"][0]["splits"]
        self.assertEqual([len(load(self.path("t0"), sp[k])) for k in ("train", "valid", "test")], [1624, 541, 541])

    def test_served_as_a_homogeneous_graph(self):
        """cora-link has one node type and one edge type: `featstore serve` serves it."""
        if not ARGS.lib:
            self.skipTest("no --lib")
        out = self.path("link")
        self.make("link", out)
        import fs_serve
        proc, ready = fs_serve.start(ARGS.featstore, out, self.path("s.sock"), stderr=subprocess.DEVNULL)
        try:
            with featstore.connect("unix://" + ready["unix"]) as c:
                i = c.info()
                self.assertEqual((i.num_nodes, i.num_edges), (2708, 8976))
                with c.gather(np.array([0, 5]), "feat") as b:
                    x = np.array(b.features)
            m = manifest(out)
            feat = load(out, m["node_types"][0]["features"]["feat"]["file"])
            np.testing.assert_array_equal(x, feat[[0, 5]])
        finally:
            self.assertEqual(fs_serve.stop(proc), 0)


def main():
    global ARGS, np, xxhash, featstore
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--featstore", required=True, help="the featstore CLI")
    p.add_argument("--lib", help="libfeatstore.so (for the one test that serves a dataset)")
    ARGS, rest = p.parse_known_args()
    for mod, pkg in (("numpy", "python3-numpy"), ("xxhash", "python3-xxhash")):
        if importlib.util.find_spec(mod) is None:
            print(f"SKIP: {sys.executable} has no {mod} (apt-get install {pkg})")
            sys.exit(SKIP)
    if ARGS.lib:
        os.environ["FEATSTORE_LIB"] = ARGS.lib  # before featstore loads the library
    sys.path.insert(0, PYDIR)
    sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))  # fs_serve
    import numpy as np
    import xxhash
    import featstore
    import featstore.dataset  # noqa: F401  (the failure test patches it)
    t0 = time.perf_counter()
    prog = unittest.main(argv=[sys.argv[0]] + rest, exit=False, verbosity=2)
    print(f"RESULT test_py_dataset took {time.perf_counter() - t0:.1f} s")
    sys.exit(0 if prog.result.wasSuccessful() else 1)


if __name__ == "__main__":
    main()
else:  # collected by pytest (tests/conftest.py): the build the environment names
    import fs_serve
    ARGS = fs_serve.pytest_args(("numpy", "xxhash"))
    import numpy as np
    import xxhash
    import featstore
    import featstore.dataset  # noqa: F401  (the failure test patches it)
