#!/usr/bin/python3
"""test_pyg.py — featstore.pyg, PyG's remote backend, against real
`featstore serve` processes and the real torch_geometric 2.8.

The module fixture writes three Cora datasets into a scratch directory
(the homogeneous import, typed Cora with a 60/20/20 split, Cora's link
dataset) and serves each (tests/lib/fs_serve.py). The oracle is the datasets'
files read with numpy, never featstore's own code: every batch's features
and labels are the rows of its n_id, every sampled edge is an edge of the
graph with its edge id, each destination has exactly min(fanout, degree)
distinct neighbours at the hop that expands it, seeds come first, the
per-hop counts add up. Checked for PyG's own NodeLoader and LinkLoader on
featstore's stores and sampler, and for featstore.pyg's NeighborLoader and
LinkNeighborLoader over unix:// and grpc://; plus the lifetime rule, the
loaders' default prefetch (two batches per stream producer), explicit seed
edges dealt and sampled exactly as their link split (the C plan), breaking
out of every kind of loader after one batch returning within 10 s, and clear
errors for what featstore refuses; and that a training epoch's reads are
counted in /metrics, by tier, exactly as received (issue 46).

Selections (unittest names) split it into ctest entries:
  PygBackend      the above (test_pyg)
  PygReference    PyG's own NeighborLoader on the same in-memory graph (needs
                  torch-sparse, PyG's sampler backend; exits 77, skipped, without it)
                  (test_pyg_vs_pyg)
  PygExamples     examples/pyg_node_classification.py (SAGE on Cora >= 0.85,
                  to_hetero on typed Cora >= 0.80) and examples/pyg_link_prediction.py
                  (>= 0.88 ROC-AUC), each over unix:// and grpc:// with identical
                  figures (test_pyg_examples)

    tests/python/test_pyg.py --featstore BUILD/cli/featstore --lib BUILD/client-lib/libfeatstore.so [SELECTION]

Runs under /usr/bin/python3 and re-executes itself in the venv of
scripts/pyg-venv.sh (.venv-pyg, or $FS_PYG_VENV) when this Python has no
torch_geometric; without either it exits 77 with the reason.
"""
import argparse
import contextlib
import importlib.util
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))  # the repository (this is tests/python/)
SKIP = 77
ARGS = None
SERVERS = {}
np = torch = featstore = pyg = None  # imported by main()


def require_pyg():
    """Re-executes in the PyG venv when this Python lacks torch_geometric; exits 77 when neither has it."""
    sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))
    import fs_serve
    fs_serve.require_pyg(ROOT)


# ---- fixture -----------------------------------------------------------------------

def setUpModule():
    import fs_serve
    cora = fs_serve.cora()
    tmp = tempfile.mkdtemp(prefix="featstore-pyg-")
    SERVERS["dir"] = tmp
    made = {"cora": fs_serve.import_cora(ARGS.featstore, os.path.join(tmp, "cora")),
            "typed": cora.write_typed(os.path.join(tmp, "typed"), split="60,20,20"),
            "link": cora.write_link(os.path.join(tmp, "link"))}
    for name, dataset in made.items():
        proc, ready = fs_serve.start(ARGS.featstore, dataset, os.path.join(tmp, f"{name}.sock"))
        SERVERS[name] = dict(proc=proc, dataset=dataset, unix="unix://" + ready["unix"],
                             grpc="grpc://" + ready["grpc"])


def tearDownModule():
    import fs_serve
    try:
        for name in ("cora", "typed", "link"):
            s = SERVERS.get(name)
            if s and fs_serve.stop(s["proc"]) != 0:
                raise AssertionError(f"featstore serve ({name}) did not exit 0 on SIGTERM")
    finally:
        for name in ("cora", "typed", "link"):
            s = SERVERS.get(name)
            if s and s["proc"].poll() is None:
                s["proc"].send_signal(signal.SIGKILL)
        shutil.rmtree(SERVERS.get("dir", ""), ignore_errors=True)


def wait_until(cond, timeout):
    """Polls cond until it holds or `timeout` seconds pass; its last value."""
    end = time.monotonic() + timeout
    while not cond() and time.monotonic() < end:
        time.sleep(0.01)
    return cond()


class Files:
    """A dataset's arrays read with numpy through its manifest: the oracle."""

    def __init__(self, name):
        self.path = SERVERS[name]["dataset"]
        with open(os.path.join(self.path, "manifest.json")) as f:
            self.m = json.load(f)

    def load(self, name):
        return np.load(os.path.join(self.path, name))

    def graph(self, key=None):
        """(indptr, indices, edge id at each position) of an edge type (the only one of a v1 dataset)."""
        if "edge_types" not in self.m:
            indices = self.load(self.m["topology"]["indices"])
            return self.load(self.m["topology"]["indptr"]), indices, np.arange(len(indices))
        e = next(e for e in self.m["edge_types"] if key is None or (e["src"], e["rel"], e["dst"]) == key)
        indices = self.load(e["indices"])
        return self.load(e["indptr"]), indices, self.load(e["edge_ids"]) if "edge_ids" in e else np.arange(
            len(indices))

    def rows(self, node_type=None, what="feat"):
        if "node_types" not in self.m:
            return self.load(self.m["features"]["feat"]["file"] if what == "feat" else self.m["labels"]["file"])
        t = next(t for t in self.m["node_types"] if node_type is None or t["name"] == node_type)
        return self.load(t["features"][what]["file"] if what != "labels" else t["labels"]["file"])

    def split(self, name, node_type=None):
        if "node_types" not in self.m:
            return self.load(self.m["splits"][name])
        t = next(t for t in self.m["node_types"] if t["name"] == node_type)
        return self.load(t["splits"][name])


# ---- the structural oracle -------------------------------------------------------------

def check_hops(tc, graph, n_id, edge_index, e_id, num_nodes_per_hop, num_edges_per_hop, fanouts, src_n_id=None,
               src_counts=None, excluded=()):
    """PyG's neighbour-sampling structure against the graph's CSC:
    hop h's edges start at nodes first reached at hop h-1 (the seeds at hop
    0), each such node has min(fanout, degree) sampled in-edges, distinct
    edges of the graph (its e_id the edge's id; Cora has parallel edges, so
    a neighbour may come twice), and the counts add up. src_* for a
    bipartite edge type (source node type); excluded: (src, dst) pairs a
    link batch leaves out (both ways), which do not count in the degree."""
    excluded = {(int(a), int(b)) for a, b in excluded} | {(int(b), int(a)) for a, b in excluded}
    indptr, indices, ids = graph
    src_n_id = n_id if src_n_id is None else src_n_id
    src_counts = num_nodes_per_hop if src_counts is None else src_counts
    tc.assertEqual(sum(num_nodes_per_hop), len(n_id))
    tc.assertEqual(sum(num_edges_per_hop), edge_index.shape[1])
    row, col = edge_index
    node_bound = np.cumsum(num_nodes_per_hop)
    src_bound = np.cumsum(src_counts)
    start = 0
    for h, count in enumerate(num_edges_per_hop):
        r, c = row[start:start + count], col[start:start + count]
        lo = node_bound[h - 1] if h else 0
        tc.assertTrue(np.all((c >= lo) & (c < node_bound[h])), f"hop {h}: destinations outside the nodes it expands")
        tc.assertTrue(np.all(r < src_bound[h + 1]), f"hop {h}: a source not counted by hop {h}")
        dst, src = n_id[c], src_n_id[r]
        for d in np.unique(c):
            v = n_id[d]
            mine = src[c == d]
            neigh = [u for u in indices[indptr[v]:indptr[v + 1]].tolist() if (u, int(v)) not in excluded]
            tc.assertEqual(len(mine), min(fanouts[h], len(neigh)) if fanouts[h] >= 0 else len(neigh),
                           f"hop {h}: node {v} has {len(mine)} sampled neighbours of {len(neigh)} (fanout {fanouts[h]})")
            if e_id is not None:
                mine_ids = e_id[start:start + count][c == d]
                tc.assertEqual(len(set(mine_ids.tolist())), len(mine), f"hop {h}: node {v} sampled an edge twice")
        for k in range(count):
            v, u = dst[k], src[k]
            lo_q, hi_q = indptr[v], indptr[v + 1]
            if e_id is not None:
                pos = np.flatnonzero(ids[lo_q:hi_q] == e_id[start + k])
                tc.assertEqual(len(pos), 1, f"hop {h}: edge id {e_id[start + k]} is not an edge into node {v}")
                tc.assertEqual(indices[lo_q + pos[0]], u, f"hop {h}: edge id {e_id[start + k]} joins another node")
            else:
                tc.assertIn(u, indices[lo_q:hi_q], f"hop {h}: ({u} -> {v}) is not an edge")
        start += count


def check_data(tc, data, files, fanouts, input_nodes=None):
    """A homogeneous batch (Data) as PyG's NeighborLoader makes it."""
    for field in ("x", "y", "edge_index", "n_id", "e_id", "num_sampled_nodes", "num_sampled_edges", "input_id",
                  "batch_size"):
        tc.assertIn(field, data, f"batch lacks {field}")
    n_id = data.n_id.numpy()
    np.testing.assert_array_equal(data.x.numpy(), files.rows()[n_id])
    np.testing.assert_array_equal(data.y.numpy(), files.rows(what="labels").reshape(-1)[n_id])
    if input_nodes is not None:
        np.testing.assert_array_equal(n_id[:data.batch_size], input_nodes[data.input_id.numpy()],
                                      "seeds first, input_id their places in input_nodes")
    tc.assertEqual(data.num_sampled_nodes[0], data.batch_size)
    check_hops(tc, files.graph(), n_id, data.edge_index.numpy(), data.e_id.numpy(), data.num_sampled_nodes,
               data.num_sampled_edges, fanouts)


def seed_edges_absent(tc, data, pairs):
    got = set(zip(data.n_id[data.edge_index[0]].tolist(), data.n_id[data.edge_index[1]].tolist()))
    for s, d in pairs:
        tc.assertNotIn((s, d), got, "a seed edge is in its own batch's subgraph")
        tc.assertNotIn((d, s), got, "a seed edge's reverse is in its own batch's subgraph")


class Served:
    """`featstore serve` on a dataset written by a test, stopped on exit."""

    def __init__(self, path):
        import fs_serve
        self.proc, ready = fs_serve.start(ARGS.featstore, path, path + ".sock", stderr=subprocess.DEVNULL)
        self.unix, self.grpc = "unix://" + ready["unix"], "grpc://" + ready["grpc"]

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        import fs_serve
        if fs_serve.stop(self.proc) != 0:
            raise AssertionError("featstore serve did not exit 0 on SIGTERM")


def cora_data():
    """Cora as PyG's Planetoid has it (undirected citations, x, y, masks),
    from tests/data/cora.npz, with an edge_attr that is the same both ways."""
    import fs_serve
    cora = fs_serve.cora()
    from torch_geometric.data import Data
    from torch_geometric.utils import to_undirected
    g = cora.load()
    ei = to_undirected(torch.from_numpy(np.stack([g["citing"], g["cited"]])))
    lo, hi = ei.min(0).values, ei.max(0).values
    data = Data(x=torch.from_numpy(cora.features(g)), y=torch.from_numpy(g["labels"]), edge_index=ei,
                edge_attr=torch.stack([lo, hi, lo + hi], 1).float())
    for name, ids in cora.node_splits(g["labels"], "planetoid", 0).items():
        mask = torch.zeros(g["num_papers"], dtype=torch.bool)
        mask[torch.from_numpy(ids)] = True
        data[f"{'val' if name == 'valid' else name}_mask"] = mask
    return data


def dataset_edges(path, key):
    """An edge type's edges read from the files, by edge id: (src, dst), and
    its stored weights and times by edge id (None when absent)."""
    with open(os.path.join(path, "manifest.json")) as f:
        e = next(e for e in json.load(f)["edge_types"] if (e["src"], e["rel"], e["dst"]) == key)
    load = lambda k: np.load(os.path.join(path, e[k])) if k in e else None  # noqa: E731
    indptr, indices = load("indptr"), load("indices")
    ids = load("edge_ids") if "edge_ids" in e else np.arange(len(indices))
    out = np.empty((2, len(ids)), np.int64)
    out[0, ids], out[1, ids] = indices, np.repeat(np.arange(len(indptr) - 1), np.diff(indptr))
    by_id = lambda a: None if a is None else a[np.argsort(ids)]  # noqa: E731
    return out, by_id(load("weights")), by_id(load("time")), e


# ---- the backend ----------------------------------------------------------------------

class PygBackend(unittest.TestCase):
    def test_feature_store_rows_are_the_files_rows(self):
        files = Files("cora")
        fs = pyg.FeatureStore(SERVERS["cora"]["unix"])
        names = sorted(a.attr_name for a in fs.get_all_tensor_attrs())
        self.assertEqual(names, ["x", "y"])
        idx = torch.tensor([5, 0, 2707, 5])
        np.testing.assert_array_equal(fs[None, "x", idx].numpy(), files.rows()[idx.numpy()])
        np.testing.assert_array_equal(fs[None, "y", idx].numpy(), files.rows(what="labels").reshape(-1)[idx.numpy()])
        self.assertEqual(tuple(fs.get_tensor_size(group_name=None, attr_name="x")), (2708, 1433))
        typed = Files("typed")
        tfs = pyg.FeatureStore(SERVERS["typed"]["grpc"])
        idx = torch.tensor([9, 3, 9, 100])
        np.testing.assert_array_equal(tfs["paper", "x", idx].numpy(), typed.rows("paper")[idx.numpy()])
        self.assertEqual(len(tfs["paper", "y", None]), len(typed.rows("paper", "labels")))
        fs.close(), tfs.close()

    def test_graph_store_serves_the_files_csc(self):
        files = Files("cora")
        fs, gs = pyg.stores(SERVERS["cora"]["unix"])
        (attr,) = gs.get_all_edge_attrs()
        row, colptr = gs.get_edge_index(attr)
        indptr, indices, _ = files.graph()
        np.testing.assert_array_equal(colptr.numpy(), indptr)
        for v in (0, 1, 1000, 2707):
            self.assertEqual(sorted(row[colptr[v]:colptr[v + 1]].tolist()), sorted(indices[indptr[v]:indptr[v + 1]]))
        fs.close()

    def test_writes_are_refused_by_name(self):
        fs, gs = pyg.stores(SERVERS["cora"]["unix"])
        with self.assertRaisesRegex(pyg.ReadOnlyError, "FeatureStore is read-only"):
            fs[None, "x", None] = torch.zeros(3, 2)
        with self.assertRaisesRegex(pyg.ReadOnlyError, "read-only"):
            del fs[None, "x", None]
        from torch_geometric.data.graph_store import EdgeAttr
        with self.assertRaisesRegex(pyg.ReadOnlyError, "GraphStore is read-only"):
            gs.put_edge_index(torch.zeros(2, 1, dtype=torch.long), EdgeAttr(None, "coo", size=(3, 3)))
        fs.close()

    def test_pyg_node_loader_runs_on_featstore_stores_and_sampler(self):
        from torch_geometric.loader import NodeLoader
        files = Files("cora")
        data = pyg.stores(SERVERS["cora"]["unix"])
        sampler = pyg.NeighborSampler(data, num_neighbors=[4, 3])
        seeds = torch.from_numpy(files.split("train")[:200])
        loader = NodeLoader(data, node_sampler=sampler, input_nodes=seeds, batch_size=64)
        batches = list(loader)
        self.assertEqual(len(batches), 4)
        for b in batches:
            check_data(self, b, files, [4, 3], seeds.numpy())
        data[0].close()

    def test_pyg_link_loader_runs_on_featstore_sampler_with_negatives(self):
        from torch_geometric.loader import LinkLoader
        files = Files("cora")
        data = pyg.stores(SERVERS["cora"]["unix"])
        indptr, indices, _ = files.graph()
        dst = np.repeat(np.arange(len(indptr) - 1), np.diff(indptr))[:300:3]
        src = indices[:300:3]
        edges = torch.from_numpy(np.stack([src, dst]))
        loader = LinkLoader(data, link_sampler=pyg.NeighborSampler(data, [5]), edge_label_index=(
            ("node", "to", "node"), edges), neg_sampling="binary", batch_size=50)
        for b in loader:
            n = len(b.input_id)
            np.testing.assert_array_equal(b.edge_label.numpy(), [1] * n + [0] * n)
            eli = b.n_id[b.edge_label_index].numpy()
            np.testing.assert_array_equal(eli[:, :n], edges[:, b.input_id].numpy(), "positives are the seed edges")
            check_hops(self, files.graph(), b.n_id.numpy(), b.edge_index.numpy(), b.e_id.numpy(), b.num_sampled_nodes,
                       b.num_sampled_edges, [5], excluded=eli[:, :n].T.tolist())
            seed_edges_absent(self, b, eli[:, :n].T.tolist())
        data[0].close()

    def test_pyg_node_loader_on_typed_cora(self):
        from torch_geometric.loader import NodeLoader
        files = Files("typed")
        data = pyg.stores(SERVERS["typed"]["grpc"])
        loader = NodeLoader(data, node_sampler=pyg.NeighborSampler(data, [3, 2]),
                            input_nodes=("paper", torch.from_numpy(files.split("train", "paper")[:96])), batch_size=48)
        for b in loader:
            paper = b["paper"]
            self.assertEqual(paper.batch_size, 48)
            np.testing.assert_array_equal(paper.x.numpy(), files.rows("paper")[paper.n_id.numpy()])
            for key in b.edge_types:
                s, _, d = key
                check_hops(self, files.graph(key), b[d].n_id.numpy(), b[key].edge_index.numpy(),
                           b[key].e_id.numpy(), b[d].num_sampled_nodes, b[key].num_sampled_edges, [3, 2],
                           src_n_id=b[s].n_id.numpy(), src_counts=b[s].num_sampled_nodes)
        data[0].close()

    def test_neighbor_loader_epochs_cover_the_split_once(self):
        files = Files("cora")
        train = files.split("train")
        loader = pyg.NeighborLoader(SERVERS["cora"]["unix"], num_neighbors=[5, 5], input_nodes="train",
                                    batch_size=256, shuffle=True, seed=3)
        self.assertEqual(len(loader), -(-len(train) // 256))
        orders = []
        for epoch in range(2):
            seen = []
            for i, b in enumerate(loader):
                if i == 0:
                    check_data(self, b, files, [5, 5], train)
                seen.append(b.n_id[:b.batch_size].clone())
            orders.append(torch.cat(seen).numpy())
            self.assertEqual(sorted(orders[-1].tolist()), sorted(train.tolist()), "an epoch is the split, once")
        self.assertFalse(np.array_equal(orders[0], orders[1]), "each epoch a new shuffle")
        loader.close()

    def test_unix_and_grpc_loaders_give_the_same_batches(self):
        kw = dict(num_neighbors=[5, 3], input_nodes="train", batch_size=128, shuffle=True, seed=11)
        a = pyg.NeighborLoader(SERVERS["cora"]["unix"], **kw)
        b = pyg.NeighborLoader(SERVERS["cora"]["grpc"], **kw)
        for k, (x, y) in enumerate(zip(a, b)):
            for field in ("n_id", "edge_index", "e_id", "x", "y", "input_id"):
                self.assertTrue(torch.equal(x[field], y[field]), f"batch {k}: {field} differs")
            self.assertEqual(x.num_sampled_edges, y.num_sampled_edges)
            if k == 3:
                break

    def test_prefetch_defaults_to_two_batches_per_producer(self):
        kw = dict(num_neighbors=[5, 3], input_nodes="train", batch_size=128, shuffle=True, seed=11)
        cores = min(len(os.sched_getaffinity(0)), 4)  # threads not given: a producer per core, up to 4
        cases = [("unix", {}, 2 * cores), ("unix", dict(threads=2), 4), ("unix", dict(threads=3), 6),
                 ("unix", dict(threads=2, prefetch=1), 1), ("grpc", {}, 2 * cores)]
        for transport, extra, want in cases:
            with self.subTest(transport=transport, **extra):
                loader = pyg.NeighborLoader(SERVERS["cora"][transport], **kw, **extra)
                self.assertEqual(loader.prefetch, want)
                first = next(iter(loader))  # the stream opens with it: within its limits
                self.assertEqual(first.batch_size, 128)
                loader.close()

    def test_edge_index_is_a_view_of_the_batch_over_both_transports(self):
        from featstore.pyg import convert  # a featstore batch as PyG's fields
        for t in ("unix", "grpc"):
            client = featstore.connect(SERVERS["cora"][t])
            with client.hetero_sample({"node": np.arange(0, 200, 7)}, {("node", "to", "node"): [4, 3, 2]},
                                      edge_ids=True) as h:
                blocks = h.blocks[h.edge_types[0]]
                address = lambda a: a.__array_interface__["data"][0]  # noqa: E731
                n = sum(b.num_edges for b in blocks)
                self.assertGreater(n, 0)
                ei, eid = convert._edge_index(blocks), convert._joined([b.edge_ids for b in blocks], False)
                self.assertEqual(ei.data_ptr(), address(blocks[0].edge_src), f"{t}: edge_index is the batch's memory")
                self.assertEqual(eid.data_ptr(), address(blocks[0].edge_ids), f"{t}: e_id is the batch's memory")
                np.testing.assert_array_equal(ei.numpy(), np.stack([np.concatenate([b.edge_src for b in blocks]),
                                                                    np.concatenate([b.edge_dst for b in blocks])]))
                np.testing.assert_array_equal(eid.numpy(), np.concatenate([b.edge_ids for b in blocks]))
                del ei, eid
            client.close()

    def test_typed_neighbor_loader_gives_hetero_data(self):
        files = Files("typed")
        loader = pyg.NeighborLoader(SERVERS["typed"]["unix"], num_neighbors={("paper", "cites", "paper"): [4, 2],
                                                                           ("word", "in", "paper"): [3, 0]},
                                    input_nodes=("paper", "train"), batch_size=100, seed=1)
        b = next(iter(loader))
        paper = b["paper"]
        self.assertEqual(paper.batch_size, 100)
        train = files.split("train", "paper")
        np.testing.assert_array_equal(paper.n_id[:100].numpy(), train[paper.input_id.numpy()])
        np.testing.assert_array_equal(paper.y.numpy(), files.rows("paper", "labels").reshape(-1)[paper.n_id.numpy()])
        self.assertNotIn("x", b["word"], "words have no feature table")
        self.assertEqual(b["paper", "has", "word"].edge_index.shape[1], 0, "unlisted edge types sample nothing")
        key = ("word", "in", "paper")
        check_hops(self, files.graph(key), paper.n_id.numpy(), b[key].edge_index.numpy(), b[key].e_id.numpy(),
                   paper.num_sampled_nodes, b[key].num_sampled_edges, [3, 0], src_n_id=b["word"].n_id.numpy(),
                   src_counts=b["word"].num_sampled_nodes)

    def test_link_neighbor_loader_over_a_link_split(self):
        client = featstore.connect(SERVERS["link"]["unix"])
        src, dst = client.split("link/train/src"), client.split("link/train/dst")
        loader = pyg.LinkNeighborLoader(client, num_neighbors=[4], edge_label_index="train", neg_sampling="binary",
                                        batch_size=200, shuffle=True, seed=5)
        self.assertEqual(len(loader), -(-len(src) // 200))
        covered = []
        for b in loader:
            n = len(b.input_id)
            np.testing.assert_array_equal(b.edge_label.numpy(), [1] * n + [0] * n)
            eli = b.n_id[b.edge_label_index].numpy()
            np.testing.assert_array_equal(eli[0, :n], src[b.input_id.numpy()])
            np.testing.assert_array_equal(eli[1, :n], dst[b.input_id.numpy()])
            seed_edges_absent(self, b, eli[:, :n].T.tolist())
            covered.append(b.input_id.numpy())
        self.assertEqual(sorted(np.concatenate(covered).tolist()), list(range(len(src))))
        client.close()

    def test_explicit_edges_shuffle_as_the_split_does(self):
        """A LinkNeighborLoader on explicit seed edges (one link_sample per
        batch over featstore.EpochPlan, the C plan) equal to a link split's
        deals, orders and samples exactly as the one on the split (a link
        stream): every batch the same, for several (seed, epoch, rank,
        world, drop_last), and len() the same."""
        client = featstore.connect(SERVERS["link"]["unix"])
        src, dst = client.split("link/train/src"), client.split("link/train/dst")
        edges = torch.from_numpy(np.stack([src, dst]))
        for seed, epoch, rank, world, drop_last in ((5, 0, 0, 1, False), (7, 2, 1, 2, True), (11, 1, 2, 3, False)):
            with self.subTest(seed=seed, epoch=epoch, rank=rank, world=world, drop_last=drop_last):
                kw = dict(num_neighbors=[3, 2], neg_sampling="binary", batch_size=500, shuffle=True, seed=seed,
                          rank=rank, world_size=world, drop_last=drop_last)
                split = pyg.LinkNeighborLoader(client, edge_label_index="train", **kw)
                explicit = pyg.LinkNeighborLoader(client, edge_label_index=edges, **kw)
                self.assertEqual(len(split), len(explicit))
                self.assertEqual(len(explicit), len(featstore.EpochPlan(len(src), 500, seed=seed, rank=rank,
                                                                        world_size=world, drop_last=drop_last)))
                split.set_epoch(epoch), explicit.set_epoch(epoch)
                batches = 0
                for a, b in zip(split, explicit, strict=True):
                    for field in ("input_id", "edge_label_index", "edge_label", "n_id", "edge_index", "e_id"):
                        self.assertTrue(torch.equal(a[field], b[field]), f"batch {batches}: {field} differs")
                    batches += 1
                self.assertEqual(batches, len(split))
                explicit.close()
        client.close()

    def test_explicit_edges_are_sampled_on_the_cores_a_stream_would_use(self):
        """Batches made by calls (explicit seed edges) split each call over
        a producer's worth of cores per core, up to 4, as a stream makes
        batches on them, unless the client's threads were given."""
        cores = min(len(os.sched_getaffinity(0)), 4)
        src, dst = np.arange(0, 40, dtype=np.int64), np.arange(1, 41, dtype=np.int64)
        for threads, want in ((None, cores), (3, 3)):
            with self.subTest(threads=threads):
                client = featstore.connect(SERVERS["link"]["unix"], threads=threads)
                loader = pyg.LinkNeighborLoader(client, num_neighbors=[3], batch_size=16, neg_sampling="binary",
                                                edge_label_index=torch.from_numpy(np.stack([src, dst])))
                self.assertEqual(next(iter(loader)).edge_label_index.shape[1], 32)
                self.assertEqual(loader._connection()._opts.threads, want)
                loader.close()
                client.close()

    def test_breaking_out_of_any_loader_after_one_batch_returns(self):
        """A consumer that stops after one batch (a break) gets control
        back, and the loader's background thread ends, within 10 s, for
        every kind of loader: node seeds from a split or ids (streams), a
        link split (a stream), explicit seed edges (calls on the prefetch
        thread; stopped while that thread waits to hand over its end)."""
        link = featstore.connect(SERVERS["link"]["unix"])
        src, dst = link.split("link/train/src"), link.split("link/train/dst")
        cora = SERVERS["cora"]["unix"]
        loaders = {
            "NeighborLoader, split": pyg.NeighborLoader(cora, num_neighbors=[3], input_nodes="train", batch_size=16),
            "NeighborLoader, ids": pyg.NeighborLoader(cora, num_neighbors=[3], input_nodes=torch.arange(500),
                                                      batch_size=16, shuffle=True),
            "LinkNeighborLoader, split": pyg.LinkNeighborLoader(link, num_neighbors=[3], edge_label_index="train",
                                                                batch_size=16, neg_sampling="binary"),
            # three batches, two made ahead: the thread made them all and waits to hand over its end
            "LinkNeighborLoader, edges": pyg.LinkNeighborLoader(
                link, num_neighbors=[3], edge_label_index=torch.from_numpy(np.stack([src, dst])),
                batch_size=-(-len(src) // 3), neg_sampling="binary", prefetch=2),
        }
        for kind, loader in loaders.items():
            with self.subTest(kind):
                done = threading.Event()

                def consume():
                    for data in loader:
                        if kind.endswith("edges"):  # until the thread made every batch (bounded)
                            wait_until(lambda: loader._conn.held_batches >= 3, 10)
                            time.sleep(0.2)
                        break
                    done.set()

                threading.Thread(target=consume, daemon=True).start()
                self.assertTrue(done.wait(10), f"{kind}: breaking out after one batch did not return in 10 s")
                self.assertTrue(wait_until(lambda: not any(t.name == "featstore-pyg-prefetch"
                                                           for t in threading.enumerate()), 10),
                                f"{kind}: the prefetch thread still runs")
                self.assertEqual(len(next(iter(loader)).n_id) > 0, True, f"{kind}: the next epoch runs")
                loader.close()
        link.close()

    def test_link_neighbor_loader_triplets_over_grpc(self):
        files = Files("cora")
        edges = torch.tensor([[0, 1, 2, 3, 4], [633, 2, 3, 4, 5]])
        loader = pyg.LinkNeighborLoader(SERVERS["cora"]["grpc"], num_neighbors=[3], edge_label_index=edges,
                                        neg_sampling=dict(mode="triplet", amount=2), batch_size=5)
        (b,) = list(loader)
        n_id = b.n_id.numpy()
        np.testing.assert_array_equal(n_id[b.src_index.numpy()], edges[0].numpy())
        np.testing.assert_array_equal(n_id[b.dst_pos_index.numpy()], edges[1].numpy())
        self.assertEqual(tuple(b.dst_neg_index.shape), (5, 2))
        self.assertTrue(np.all(n_id[b.dst_neg_index.numpy()] < 2708))
        check_hops(self, files.graph(), n_id, b.edge_index.numpy(), b.e_id.numpy(), b.num_sampled_nodes,
                   b.num_sampled_edges, [3], excluded=edges.numpy().T.tolist())

    def test_batches_are_views_within_hold_and_copies_with_copy(self):
        kw = dict(num_neighbors=[2], input_nodes="train", batch_size=64)
        loader = pyg.NeighborLoader(SERVERS["cora"]["unix"], hold=2, **kw)
        with self.assertRaisesRegex(featstore.Error, r"copy=True"):
            list(loader)  # keeps every batch, views and all
        kept = list(pyg.NeighborLoader(SERVERS["cora"]["unix"], hold=2, copy=True, **kw))
        self.assertEqual(len(kept), len(loader))
        files = Files("cora")
        np.testing.assert_array_equal(kept[0].x.numpy(), files.rows()[kept[0].n_id.numpy()])

    def test_from_pyg_cora_trains_with_the_neighbor_loader(self):
        """PyG's Cora Data written by from_pyg: the NeighborLoader recipe
        (input_nodes="train", batch.x, batch.y) trains on it, and every
        batch is the source Data's rows and edges (e_id = its column)."""
        from torch_geometric.nn import SAGEConv
        data = cora_data()
        path = featstore.from_pyg(data, os.path.join(SERVERS["dir"], "from-pyg-cora"), num_classes=7)
        self.assertTrue(data.is_undirected())
        text = subprocess.run([ARGS.featstore, "info", path], capture_output=True, text=True, timeout=60).stdout
        self.assertIn("edges     10556  (undirected, int32 indices)", text)
        self.assertIn("splits    train 140, valid 500, test 1000", text)
        train = data.train_mask.nonzero().view(-1).numpy()
        torch.manual_seed(0)
        conv1, conv2 = SAGEConv(1433, 16), SAGEConv(16, 7)
        opt = torch.optim.Adam(list(conv1.parameters()) + list(conv2.parameters()), lr=0.01)
        with Served(path) as s:
            with featstore.connect(s.grpc) as c:
                self.assertTrue(c.info().symmetric, "reported undirected")
                self.assertEqual(c.info().num_classes, 7)
            seen = []
            for batch in pyg.NeighborLoader(s.unix, num_neighbors=[5, 3], input_nodes="train", batch_size=32,
                                            shuffle=True):
                n_id, e_id = batch.n_id, batch.e_id
                self.assertTrue(torch.equal(batch.x, data.x[n_id]))
                self.assertTrue(torch.equal(batch.y, data.y[n_id]))
                self.assertTrue(torch.equal(n_id[batch.edge_index], data.edge_index[:, e_id]), "e_id is the column")
                self.assertTrue(torch.equal(batch.edge_attr, data.edge_attr[e_id]))
                seen += n_id[:batch.batch_size].tolist()
                out = conv2(conv1(batch.x, batch.edge_index).relu(), batch.edge_index)[:batch.batch_size]
                loss = torch.nn.functional.cross_entropy(out, batch.y[:batch.batch_size])
                opt.zero_grad()
                loss.backward()
                opt.step()
                self.assertTrue(torch.isfinite(loss))
            self.assertEqual(sorted(seen), sorted(train.tolist()), "an epoch is the train mask's nodes, once")

    def test_from_pyg_directed_data_and_what_it_leaves_out(self):
        from torch_geometric.data import Data
        data = Data(x=torch.rand(3, 2), edge_index=torch.tensor([[0, 1], [1, 2]]), n_id=torch.arange(3),
                    score=torch.rand(3).double(), kind=torch.tensor([1, 2, 3]))
        with self.assertWarns(UserWarning) as w:
            path = featstore.from_pyg(data, os.path.join(SERVERS["dir"], "from-pyg-directed"))
        self.assertIn("Data: 'n_id' is left out: a loader's batch bookkeeping", str(w.warning))
        self.assertIn("Data: 'kind' is left out: int64 of shape (3,) is none of", str(w.warning))
        with open(os.path.join(path, "manifest.json")) as f:
            m = json.load(f)
        self.assertEqual(sorted(m["node_types"][0]["features"]), ["feat", "score"])
        self.assertNotIn("symmetric", m["edge_types"][0])
        self.assertFalse(data.is_undirected())
        with self.assertRaisesRegex(ValueError, r"edge 0 \(0 -> 1\) has no reverse \(1 -> 0\)"):
            featstore.from_pyg(data, os.path.join(SERVERS["dir"], "from-pyg-refused"), undirected=True)
        self.assertFalse(os.path.exists(os.path.join(SERVERS["dir"], "from-pyg-refused")))
        with self.assertRaisesRegex(TypeError, "Data or HeteroData"):
            featstore.from_pyg({"x": 1}, os.path.join(SERVERS["dir"], "from-pyg-dict"))

    def test_from_pyg_hetero_data_round_trip(self):
        """A HeteroData with edge features, times and weights comes back from
        the files and from a typed NeighborLoader as it went in."""
        from torch_geometric.data import HeteroData
        g = torch.Generator().manual_seed(5)
        h = HeteroData()
        h["paper"].x = torch.rand(6, 4, generator=g)
        h["paper"].y = torch.tensor([0, 1, 2, 0, -1, 1])
        h["paper"].time = torch.tensor([5, 3, 9, 1, 7, 2])
        h["paper"].train_mask = torch.tensor([True, False, True, True, False, False])
        h["author"].x = torch.rand(4, 3, generator=g)
        writes = h["author", "writes", "paper"]
        writes.edge_index = torch.tensor([[0, 1, 1, 2, 3, 3, 0, 2], [0, 0, 2, 3, 4, 5, 5, 1]])
        writes.edge_attr = torch.rand(8, 2, generator=g)
        writes.edge_time = torch.tensor([4, 1, 8, 0, 6, 2, 2, 3])
        cites = h["paper", "cites", "paper"]
        cites.edge_index = torch.tensor([[0, 1, 2, 3, 4, 5], [1, 0, 3, 2, 5, 4]])
        cites.edge_weight = torch.tensor([0.5, 0.5, 2.0, 2.0, 1.0, 1.0])
        h["paper", "rev_writes", "author"].edge_index = writes.edge_index.flip(0)
        self.assertEqual([h[et].is_undirected() for et in h.edge_types], [False, True, False])
        path = featstore.from_pyg(h, os.path.join(SERVERS["dir"], "from-pyg-hetero"))
        text = subprocess.run([ARGS.featstore, "info", path], capture_output=True, text=True, timeout=60).stdout
        self.assertIn("edge type (paper, cites, paper): 6 edges, int32 sources, in-degree mean 1.00 max 1, undirected",
                      text)
        self.assertIn("edge type (author, writes, paper): 8 edges, int32 sources, in-degree mean 1.33 max 2, edge ids,"
                      " timed", text)
        for et in h.edge_types:
            edges, weights, times, entry = dataset_edges(path, et)
            np.testing.assert_array_equal(edges, h[et].edge_index.numpy(), f"{et}: edge i is column i")
            self.assertEqual(entry.get("symmetric", False), et[1] == "cites")
        _, weights, _, _ = dataset_edges(path, ("paper", "cites", "paper"))
        np.testing.assert_array_equal(weights, cites.edge_weight.numpy())
        _, _, times, entry = dataset_edges(path, ("author", "writes", "paper"))
        np.testing.assert_array_equal(times, writes.edge_time.numpy())
        np.testing.assert_array_equal(np.load(os.path.join(path, entry["features"]["feat"]["file"])),
                                      writes.edge_attr.numpy())
        with open(os.path.join(path, "manifest.json")) as f:
            paper = json.load(f)["node_types"][0]
        np.testing.assert_array_equal(np.load(os.path.join(path, paper["time"])), h["paper"].time.numpy())
        np.testing.assert_array_equal(np.load(os.path.join(path, paper["splits"]["train"])), [0, 2, 3])
        self.assertEqual(paper["labels"]["num_classes"], 3)
        with Served(path) as s:
            loader = pyg.NeighborLoader(s.grpc, num_neighbors=[3, 2], input_nodes=("paper", "train"), batch_size=3)
            b = next(iter(loader))
            for t in ("paper", "author"):
                self.assertTrue(torch.equal(b[t].x, h[t].x[b[t].n_id]), t)
            self.assertTrue(torch.equal(b["paper"].y, h["paper"].y[b["paper"].n_id]))
            for et in h.edge_types:
                src, dst, e_id = b[et[0]].n_id, b[et[2]].n_id, b[et].e_id
                self.assertTrue(torch.equal(torch.stack([src[b[et].edge_index[0]], dst[b[et].edge_index[1]]]),
                                            h[et].edge_index[:, e_id]), et)
            wb = b["author", "writes", "paper"]
            self.assertGreater(wb.e_id.numel(), 0)
            self.assertTrue(torch.equal(wb.edge_attr, writes.edge_attr[wb.e_id]))

    def test_misspelt_arguments_are_named_with_the_allowed_ones(self):
        uri = SERVERS["cora"]["unix"]
        client = featstore.connect(uri)
        cases = [(pyg.NeighborLoader, (uri, [2]), dict(batchsize=8), "batch_size"),
                 (pyg.NeighborLoader, (client, [2]), dict(input_node="train"), "input_nodes"),
                 (pyg.LinkNeighborLoader, (uri, [2]), dict(neg_sampling_raito=1.0), "neg_sampling_ratio"),
                 (pyg.NeighborSampler, (uri, [2]), dict(treads=2), "threads"),
                 (pyg.FeatureStore, (uri,), dict(devce="cpu"), "device"),
                 (pyg.stores, (uri,), dict(slot=2), "slots")]
        for f, args, kw, meant in cases:
            with self.subTest(f=f.__name__, kw=kw):
                with self.assertRaises(TypeError) as cm:
                    f(*args, **kw)
                msg = str(cm.exception)
                bad = next(iter(kw))
                self.assertTrue(msg.startswith(f"{f.__name__}() got an unexpected keyword argument '{bad}' "
                                               f"(did you mean '{meant}'?); it takes "), msg)
                self.assertIn("connection options device, slots, threads, timeout_ms", msg)
                self.assertNotIn("Client.__init__", msg)
        with self.assertRaises(TypeError) as cm:
            pyg.NeighborLoader(uri, [2], zzz=1)
        self.assertIn("it takes data, num_neighbors, input_nodes, input_time, batch_size, shuffle", str(cm.exception))
        client.close()

    def test_bad_input_is_named(self):
        uri = SERVERS["cora"]["unix"]
        cases = [(dict(num_neighbors=[2], replace=True), "replace=True"),
                 (dict(num_neighbors=[2], subgraph_type="induced"), "directional"),
                 (dict(num_neighbors=[2], input_nodes=[0, 5000]), "id 5000 out of range"),
                 (dict(num_neighbors=[2], input_nodes="nosuch"), "nosuch"),
                 (dict(num_neighbors=[2], weight_attr="w"), "no edge weights"),
                 (dict(num_neighbors=[2], batch_size=0), "batch_size"),
                 (dict(num_neighbors="2"), "num_neighbors"),
                 (dict(num_neighbors=[2], num_workers=4), "num_workers: .*stream's own thread")]
        for kw, message in cases:
            with self.subTest(kw=kw):
                with self.assertRaisesRegex(Exception, message):
                    loader = pyg.NeighborLoader(uri, **{"batch_size": 8, **kw})
                    next(iter(loader))
        with self.assertRaisesRegex(ValueError, r"shape \[2, m\]"):
            pyg.LinkNeighborLoader(uri, num_neighbors=[2], edge_label_index=torch.zeros(3, 4, dtype=torch.long))
        with self.assertRaisesRegex(ValueError, "no such link split"):
            pyg.LinkNeighborLoader(uri, num_neighbors=[2], edge_label_index="train")
        with self.assertRaisesRegex(KeyError, "no node type 'author'"):
            pyg.NeighborLoader(SERVERS["typed"]["unix"], num_neighbors=[2], input_nodes=("author", None))


# ---- what /metrics counts --------------------------------------------------------------

@contextlib.contextmanager
def cache_off():
    """FEATSTORE_CACHE_MB=0 inside: grpc:// connections cache no hot rows."""
    old = os.environ.get("FEATSTORE_CACHE_MB")
    os.environ["FEATSTORE_CACHE_MB"] = "0"
    try:
        yield
    finally:
        if old is None:
            del os.environ["FEATSTORE_CACHE_MB"]
        else:
            os.environ["FEATSTORE_CACHE_MB"] = old


def reads_by_tier(port, reader):
    """{family: {tier: value}} of the four read counters of one reader."""
    import fs_serve
    text = fs_serve.metrics({"metrics": port})
    out = {}
    for name, tier, value in re.findall(r'^featstore_(\w+)_read_total\{reader="%s",tier="(\d+)",[^}]*\} (\d+)$' % reader,
                                        text, re.M):
        out.setdefault(name, {})[int(tier)] = int(value)
    return out


def moved(before, after):
    return {name: {t: v - before.get(name, {}).get(t, 0) for t, v in tiers.items()} for name, tiers in after.items()}


def received(batch, index_bytes):
    """What a NeighborLoader batch holds, as /metrics counts reads: the rows
    of x and y (one row per node each, at the stored size), the neighbour
    lists of the nodes each hop expanded (every hop's but the last's new
    nodes) and the edges taken from them, at the index width."""
    rows = batch.x.shape[0] + batch.y.shape[0]
    nbytes = batch.x.numel() * batch.x.element_size() + batch.y.numel() * batch.y.element_size()
    lists = sum(batch.num_sampled_nodes[:-1])
    return {"feature_rows": rows, "feature_bytes": nbytes, "topology_lists": lists,
            "topology_bytes": batch.edge_index.shape[1] * index_bytes}


class PygMetrics(unittest.TestCase):
    def test_a_training_epoch_is_counted_by_tier_as_received(self):
        """One epoch of GraphSAGE training through featstore.pyg's
        NeighborLoader, on a server of its own, over unix:// and grpc://: the
        rows, bytes, lists and list bytes the trainer received are what the
        read counters moved by (unix:// trainers read in their own process,
        reader "local"; grpc:// ones through the server, "server"), and
        every tier read from has a non-zero count. The grpc:// trainer
        caches no hot rows here (FEATSTORE_CACHE_MB=0), so that it receives
        every row it uses: the cache's reads are test_hot_cache.py's."""
        import fs_serve
        from torch_geometric.nn import SAGEConv
        files = Files("cora")
        index_bytes = files.graph()[1].dtype.itemsize
        proc, ready = fs_serve.start(ARGS.featstore, SERVERS["cora"]["dataset"],
                                     os.path.join(SERVERS["dir"], "metrics.sock"))
        try:
            port = int(ready["metrics"])
            for transport, reader in (("unix", "local"), ("grpc", "server")):
                with self.subTest(transport=transport), cache_off():
                    before = reads_by_tier(port, reader)
                    model = SAGEConv(files.rows().shape[1], 7)
                    opt = torch.optim.Adam(model.parameters(), lr=0.01)
                    loader = pyg.NeighborLoader(f"{transport}://" + ready[transport], num_neighbors=[5, 3],
                                                input_nodes="train", batch_size=256, shuffle=True, seed=5)
                    want = dict(feature_rows=0, feature_bytes=0, topology_lists=0, topology_bytes=0)
                    for b in loader:
                        opt.zero_grad()
                        out = model(b.x, b.edge_index)[:b.batch_size]
                        torch.nn.functional.cross_entropy(out, b.y[:b.batch_size]).backward()
                        opt.step()
                        for k, v in received(b, index_bytes).items():
                            want[k] += int(v)
                    loader.close()
                    deadline = time.monotonic() + 10  # unix:// reports arrive asynchronously
                    while True:
                        got = moved(before, reads_by_tier(port, reader))
                        totals = {k: sum(v.values()) for k, v in got.items()}
                        if totals == want or time.monotonic() > deadline:
                            break
                        time.sleep(0.05)
                    print(f"RESULT pyg_metrics transport={transport} " + " ".join(f"{k}={v}" for k, v in want.items()))
                    self.assertGreater(want["feature_rows"], 0)
                    self.assertEqual(totals, want, f"counted by tier: {got}")
                    for name, tiers in got.items():
                        self.assertTrue(any(v > 0 for v in tiers.values()), f"{name}: no tier counted")
        finally:
            self.assertEqual(fs_serve.stop(proc), 0)


# ---- PyG's own sampler beside ours -----------------------------------------------------

class PygReference(unittest.TestCase):
    """PyG's NeighborLoader (torch-sparse) and featstore's on one graph:
    the same fields, seeds first, valid edges, equal fanout counts (the
    oracle passes PyG's batches too, which checks the oracle)."""

    @classmethod
    def setUpClass(cls):
        if importlib.util.find_spec("torch_sparse") is None and importlib.util.find_spec("pyg_lib") is None:
            raise unittest.SkipTest("PyG's NeighborLoader needs torch-sparse or pyg-lib: pyg-lib is not on PyPI and "
                                    "torch-sparse builds from source in ~10 minutes (bench/peers/setup.sh builds it)")

    def test_batches_agree_structurally_with_pyg_neighbor_loader(self):
        from torch_geometric.data import Data
        from torch_geometric.loader import NeighborLoader
        files = Files("cora")
        indptr, indices, _ = files.graph()
        dst = np.repeat(np.arange(len(indptr) - 1), np.diff(indptr))
        data = Data(x=torch.from_numpy(files.rows()), y=torch.from_numpy(files.rows(what="labels").reshape(-1)),
                    edge_index=torch.from_numpy(np.stack([indices, dst]).astype(np.int64)))
        seeds = torch.from_numpy(files.split("train")[:256])
        theirs = NeighborLoader(data, num_neighbors=[6, 4], input_nodes=seeds, batch_size=64)
        ours = pyg.NeighborLoader(SERVERS["cora"]["unix"], num_neighbors=[6, 4], input_nodes=seeds, batch_size=64)
        indptr, indices, _ = files.graph()
        for a, b in zip(theirs, ours):
            missing = set(a.keys()) - set(b.keys())
            self.assertFalse(missing, f"featstore's batch lacks PyG's fields {sorted(missing)}")
            self.assertEqual(a.batch_size, b.batch_size)
            self.assertTrue(torch.equal(a.n_id[:a.batch_size], b.n_id[:b.batch_size]), "the same seeds, first")
            for batch in (a, b):  # PyG's too: the oracle must pass the reference
                n_id, (row, col), e_id = batch.n_id.numpy(), batch.edge_index.numpy(), batch.e_id.numpy()
                np.testing.assert_array_equal(batch.x.numpy(), files.rows()[n_id])
                src, dst = n_id[row], n_id[col]
                np.testing.assert_array_equal(indices[e_id], src, "e_id: the edge's position, its source")
                self.assertTrue(np.all((indptr[dst] <= e_id) & (e_id < indptr[dst + 1])), "e_id: an edge into dst")
            # each seed has min(6, degree) in-edges in both (seeds are expanded at hop 0 only)
            seeds_in = lambda batch: np.bincount(batch.edge_index[1].numpy(), minlength=batch.num_nodes)[  # noqa: E731
                :batch.batch_size]
            want = np.minimum(6, np.diff(indptr)[a.n_id[:a.batch_size].numpy()])
            np.testing.assert_array_equal(seeds_in(a), want)
            np.testing.assert_array_equal(seeds_in(b), want)
            check_data(self, b, files, [6, 4], seeds.numpy())


# ---- the examples ------------------------------------------------------------------------

FINAL = re.compile(r"test_(acc|auc)=(\d+\.\d+) valid_\w+=(\d+\.\d+) best_epoch=(\d+)")


def run_example(script, uri, extra=()):
    cmd = [sys.executable, os.path.join(ROOT, "examples", script), "--uri", uri, "--seed", "0", "--torch-threads",
           "1"] + list(extra)
    t0 = time.perf_counter()
    out = subprocess.run(cmd, env=dict(os.environ, FEATSTORE_LIB=ARGS.lib), capture_output=True, text=True,
                         timeout=900)
    if out.returncode != 0:
        raise AssertionError(f"{script} over {uri} exited {out.returncode}:\n{out.stdout}\n{out.stderr}")
    m = FINAL.search(out.stdout.splitlines()[-1])
    if not m:
        raise AssertionError(f"{script}: no final figures in\n{out.stdout}")
    return m.groups()[1:], time.perf_counter() - t0


class PygExamples(unittest.TestCase):
    def check(self, script, server, metric, target, extra=()):
        runs = {}
        for transport in ("unix", "grpc"):
            runs[transport], seconds = run_example(script, SERVERS[server][transport], extra)
            print(f"RESULT {script} dataset={server} transport={transport} {metric}={runs[transport][0]} "
                  f"valid={runs[transport][1]} best_epoch={runs[transport][2]} seconds={seconds:.1f}", flush=True)
        self.assertGreaterEqual(float(runs["unix"][0]), target, f"{script} on {server}: {metric} under {target}")
        self.assertEqual(runs["unix"], runs["grpc"], f"{script}: the same batches over grpc:// train the same model")

    def test_sage_on_cora(self):
        self.check("pyg_node_classification.py", "cora", "test_acc", 0.85)

    def test_to_hetero_sage_on_typed_cora(self):
        self.check("pyg_node_classification.py", "typed", "test_acc", 0.80, ["--epochs", "5"])

    def test_link_prediction_on_cora_citations(self):
        self.check("pyg_link_prediction.py", "link", "test_auc", 0.88)


def main():
    global ARGS, np, torch, featstore, pyg
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--featstore", required=True)
    p.add_argument("--lib", required=True)
    ARGS, rest = p.parse_known_args()
    require_pyg()
    os.environ["FEATSTORE_LIB"] = ARGS.lib
    sys.path.insert(0, os.path.join(ROOT, "client-lib", "python"))
    sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))  # fs_serve
    import numpy as np
    import torch
    import featstore
    from featstore import pyg
    if rest == ["PygReference"] and PygReference.setUpClass.__func__ and (
            importlib.util.find_spec("torch_sparse") is None and importlib.util.find_spec("pyg_lib") is None):
        print("SKIP: PyG's NeighborLoader needs torch-sparse or pyg-lib (pyg-lib is not on PyPI; torch-sparse builds "
              "from source in ~10 minutes: bench/peers/setup.sh builds it; FS_PYG_VENV=~/.cache/featstore-peers/pyg "
              "runs this comparison)")
        sys.exit(SKIP)
    t0 = time.perf_counter()
    prog = unittest.main(argv=[sys.argv[0]] + rest, exit=False, verbosity=2)
    print(f"RESULT test_pyg {' '.join(rest) or 'all'} took {time.perf_counter() - t0:.1f} s")
    sys.exit(0 if prog.result.wasSuccessful() else 1)


if __name__ == "__main__":
    main()
else:  # collected by pytest (tests/conftest.py): the build the environment names
    import fs_serve
    ARGS = fs_serve.pytest_args(("numpy", "torch", "torch_geometric"))
    import numpy as np
    import torch
    import featstore
    from featstore import pyg
    if importlib.util.find_spec("torch_sparse") is None and importlib.util.find_spec("pyg_lib") is None:
        PygReference = unittest.skip("PyG's NeighborLoader needs torch-sparse or pyg-lib")(PygReference)
