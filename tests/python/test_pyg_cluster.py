#!/usr/bin/python3
"""test_pyg_cluster.py — a sharded cluster seen from Python and PyG: the
same batches as one server, bit for bit (issue 48).

Cora (homogeneous) and a typed R-MAT are each served whole (unix://) and,
partitioned into 8 parts, by a cluster of 2 and one of 4 shard servers on
a private etcd (etcd://); two of the 4 also have a unix socket, so this
process answers them itself (the unix:// path) and the rest over gRPC. featstore.pyg's NeighborLoader walks a shuffled
epoch over each, and every batch's n_id, edge_index, e_id, x, y and
input_id must be equal; so must LinkNeighborLoader's batches (binary negatives,
the seed edges excluded; degree-weighted binary and triplet negatives over seed
edges without times), the binding's strict and weighted link_sample,
sample_gather and splits.
A trainer may open and close its loader mid-epoch, and two trainers read
the cluster at once, without the other noticing.

    tests/python/test_pyg_cluster.py --featstore BUILD/cli/featstore --lib BUILD/client-lib/libfeatstore.so

Exits 77 (skipped) without etcd, or without torch_geometric here and in the
venv of scripts/pyg-venv.sh (re-executed there as test_pyg.py is).
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "lib"))
sys.path.insert(0, HERE)
import fs_serve  # noqa: E402

ARGS = None
RUN = {}
np = torch = featstore = pyg = pyg_sampler = None

DROP_EDGE_TABLES = """
import json, os, sys
d = sys.argv[1]; m = json.load(open(d + '/manifest.json'))
for e in m.get('edge_types', []):
    for t in e.pop('features', {}).values():
        m['files'].pop(t['file']); os.remove(d + '/' + t['file'])
json.dump(m, open(d + '/manifest.json', 'w'))
"""


def serve_cluster(name, root, layout, local=()):
    """Shards of root in cluster `name`, shard k holding layout[k] ("0-3");
    those in `local` with a unix socket too, so this machine's trainers
    answer them in process (and the others over gRPC)."""
    for k, parts in enumerate(layout):
        sock = os.path.join(RUN["dir"], f"{name}-{k}.sock") if k in local else None
        RUN["procs"].append(fs_serve.start_shard(ARGS.featstore, root, parts, RUN["etcd"], name, k, socket=sock)[0])
    return f"etcd://{RUN['etcd']}/{name}"


def setUpModule():
    tmp = tempfile.mkdtemp(prefix="featstore-cluster-")
    RUN.update(dir=tmp, procs=[])
    proc, RUN["etcd"] = fs_serve.start_etcd(tmp)
    RUN["procs"].append(proc)
    cora = fs_serve.import_cora(ARGS.featstore, os.path.join(tmp, "cora"))
    typed = os.path.join(tmp, "typed")
    subprocess.run([ARGS.featstore, "gen", "rmat", "--typed", "--scale", "10", "--out", typed], check=True,
                   stdout=subprocess.DEVNULL)
    subprocess.run(["/usr/bin/python3", "-c", DROP_EDGE_TABLES, typed], check=True)
    for name, data in (("cora", cora), ("typed", typed)):
        subprocess.run([ARGS.featstore, "partition", data, "--parts", "8", "--out", data + ".parts"], check=True,
                       stdout=subprocess.DEVNULL)
        proc, ready = fs_serve.start(ARGS.featstore, data, os.path.join(tmp, name + ".sock"))
        RUN["procs"].append(proc)
        RUN[name] = {"one": "unix://" + ready["unix"],
                     "two": serve_cluster(name + "2", data + ".parts", ["0-3", "4-7"]),
                     "four": serve_cluster(name + "4", data + ".parts", ["0,4", "1,5", "2,6", "3,7"], local=(0, 2))}


def tearDownModule():
    try:
        for proc in reversed(RUN.get("procs", [])):
            fs_serve.stop(proc)
    finally:
        shutil.rmtree(RUN.get("dir", ""), ignore_errors=True)


def same_batches(tc, loaders, fields, stop_after=None):
    """Every loader's batches equal field by field; their number."""
    n = 0
    for k, batches in enumerate(zip(*loaders)):
        first = batches[0]
        for other in batches[1:]:
            for f in fields:
                tc.assertTrue(torch.equal(first[f], other[f]), f"batch {k}: {f} differs")
        n += 1
        if stop_after is not None and n == stop_after:
            break
    return n


def same_typed(tc, loaders, stop_after, labelled=None, extra=()):
    """Typed batches equal node type by node type, edge type by edge type
    (and edge type `labelled`'s edge_label_index and edge_label, and each
    (store, field) of `extra`), up to stop_after (None: all); their number."""
    n = 0
    for k, batches in enumerate(zip(*loaders)):
        a = batches[0]
        for b in batches[1:]:
            for t in a.node_types:
                tc.assertTrue(torch.equal(a[t].n_id, b[t].n_id), f"batch {k}: {t}.n_id")
                if "x" in a[t]:
                    tc.assertTrue(torch.equal(a[t].x, b[t].x), f"batch {k}: {t}.x")
            for e in a.edge_types:
                tc.assertTrue(torch.equal(a[e].edge_index, b[e].edge_index), f"batch {k}: {e}")
            fields = [(labelled, f) for f in ("edge_label_index", "edge_label")] if labelled else []
            for store, f in fields + list(extra):
                tc.assertTrue(torch.equal(a[store][f], b[store][f]), f"batch {k}: {f}")
        n += 1
        if n == stop_after:
            break
    return n


class ClusterLoaders(unittest.TestCase):
    def test_node_loader_epochs_are_one_server_s(self):
        kw = dict(num_neighbors=[5, 3], input_nodes="train", batch_size=128, shuffle=True, seed=11)
        loaders = [pyg.NeighborLoader(RUN["cora"][k], **kw) for k in ("one", "two", "four")]
        n = same_batches(self, loaders, ("n_id", "edge_index", "e_id", "x", "y", "input_id"))
        self.assertEqual(n, len(loaders[0]), "a whole epoch")
        for loader in loaders:
            loader.close()

    def test_typed_loader_batches_are_one_server_s(self):
        fan = {("paper", "cites", "paper"): [4, 2], ("author", "writes", "paper"): [2, 2],
               ("paper", "written_by", "author"): [0, 3], ("venue", "publishes", "paper"): [1, 1]}
        kw = dict(num_neighbors=fan, input_nodes=("paper", "train"), batch_size=64, shuffle=True, seed=3)
        loaders = [pyg.NeighborLoader(RUN["typed"][k], **kw) for k in ("one", "two", "four")]
        self.assertEqual(same_typed(self, loaders, 5), 5)
        for loader in loaders:
            loader.close()

    def test_temporal_loader_batches_are_one_server_s(self):
        """Temporal batches, the seeds timed by their nodes' timestamps (read from the shards)."""
        fan = {("paper", "cites", "paper"): [4, 2], ("author", "writes", "paper"): [2, 2]}
        kw = dict(num_neighbors=fan, input_nodes=("paper", "train"), batch_size=64, shuffle=True, seed=4,
                  time_attr="time")
        loaders = [pyg.NeighborLoader(RUN["typed"][k], **kw) for k in ("one", "two", "four")]
        n = same_typed(self, loaders, 3)
        self.assertEqual(n, 3)
        for loader in loaders:
            loader.close()

    def test_link_loader_batches_are_one_server_s(self):
        fan = {("paper", "cites", "paper"): [4, 2], ("author", "writes", "paper"): [2, 2],
               ("paper", "written_by", "author"): [0, 3], ("venue", "publishes", "paper"): [1, 1]}
        kw = dict(num_neighbors=fan, edge_label_index="train", neg_sampling="binary", time_attr="time",
                  batch_size=64, shuffle=True, seed=9)
        loaders = [pyg.LinkNeighborLoader(RUN["typed"][k], **kw) for k in ("one", "two", "four")]
        self.assertEqual(same_typed(self, loaders, 4, ("paper", "cites", "paper")), 4)
        for loader in loaders:
            loader.close()

    def test_link_loader_negatives_of_every_kind_without_seed_times(self):
        """LinkNeighborLoader over explicit seed edges without times (time_attr: their endpoints' timestamps,
        read from the shards), degree-weighted binary and triplet negatives (neg_weighted: the root's degree
        arrays): one server's batches."""
        et = ("paper", "cites", "paper")
        fan = {et: [4, 2], ("author", "writes", "paper"): [2, 2]}
        probe = featstore.connect(RUN["typed"]["one"])
        edges = torch.stack([torch.from_numpy(probe.split("link/train/src")[:192].copy()),
                             torch.from_numpy(probe.split("link/train/dst")[:192].copy())])
        probe.close()
        for neg in ("binary", pyg_sampler.NegativeSampling("triplet", 3)):
            kw = dict(num_neighbors=fan, edge_label_index=(et, edges), neg_sampling=neg, neg_weighted=True,
                      time_attr="time", batch_size=64, shuffle=True, seed=13)
            loaders = [pyg.LinkNeighborLoader(RUN["typed"][k], **kw) for k in ("one", "two", "four")]
            labelled = et if neg == "binary" else None
            # triplet: the indices on the source's and destination's node stores, as PyG puts them
            triplet = () if labelled else ((et[0], "src_index"), (et[2], "dst_pos_index"), (et[2], "dst_neg_index"))
            n = same_typed(self, loaders, None, labelled, triplet)
            self.assertEqual(n, 3, "every batch of the 192 edges")
            for loader in loaders:
                loader.close()

    def test_binding_strict_and_weighted_negatives(self):
        """link_sample with strict, degree-weighted negatives (featstore.pyg's loaders take no strict option:
        the binding's call is the way to them): one server's arrays."""
        et = ("paper", "cites", "paper")
        clients = [featstore.connect(RUN["typed"][k]) for k in ("one", "two", "four")]
        src, dst = clients[0].split("link/train/src")[:50], clients[0].split("link/train/dst")[:50]
        for neg, amount in (("binary", 8), ("triplet", 6)):
            got = []
            for c in clients:
                b = c.link_sample(et, src, dst, num_neighbors={et: [3, 2]}, neg=neg, amount=amount,
                                  neg_strict=True, neg_weighted=True, seed=21)
                got.append({f: np.array(getattr(b, f)) for f in ("edge_label_index", "edge_label", "src_index",
                                                                  "dst_pos_index", "dst_neg_index")
                            if getattr(b, f) is not None} | {"paper": np.array(b.nodes["paper"])})
                b.release()
            for g in got[1:]:
                self.assertEqual(sorted(g), sorted(got[0]))
                for f in g:
                    self.assertTrue(np.array_equal(g[f], got[0][f]), f"{neg}: {f}")
        for c in clients:
            c.close()

    def test_binding_calls_and_splits(self):
        clients = [featstore.connect(RUN["cora"][k]) for k in ("one", "two", "four")]
        self.assertEqual([c.transport for c in clients], ["unix", "etcd", "etcd"])
        seeds = np.arange(0, 2708, 37, dtype=np.int64)
        batches = [c.sample_gather(seeds, [10, 5], table="feat", seed=5) for c in clients]
        for b in batches[1:]:
            self.assertTrue(np.array_equal(batches[0].nodes, b.nodes))
            self.assertTrue(np.array_equal(batches[0].features, b.features))
        for b in batches:
            b.release()
        splits = [c.split("train") for c in clients]
        for s in splits[1:]:
            self.assertTrue(np.array_equal(splits[0], s))
        with self.assertRaises(featstore.Error) as cm:
            clients[1].gather([99999], "feat")
        self.assertIn("99999", str(cm.exception))
        trainer = clients[2].stats()  # this process's own counters first, exactly the documented families
        doc = os.path.join(os.path.dirname(os.path.dirname(HERE)), "docs", "metrics.md")
        families = dict(re.findall(r"^# TYPE (featstore_trainer_\w+) (\w+)$", trainer, re.M))
        self.assertEqual(families, fs_serve.trainer_families(doc))
        self.assertIn("\nfeatstore_trainer_local_shards 2\n", trainer)  # shards 0 and 2 of four: in process
        mine = clients[2].split("train", local=True)  # what shards 0 and 2 hold, in the split's order
        whole = splits[0]
        self.assertTrue(0 < len(mine) < len(whole))
        self.assertTrue(np.array_equal(whole[np.isin(whole, mine)], mine))
        with self.assertRaises(featstore.Error):  # no shard of "two" is on this machine
            clients[1].split("train", local=True)
        for c in clients:
            c.close()

    def test_trainers_join_and_leave_mid_epoch(self):
        """No fixed number of trainers: one stops after 3 batches, a new one
        starts, and a trainer reading meanwhile gets the one server's epoch."""
        kw = dict(num_neighbors=[5, 3], input_nodes="train", batch_size=64, shuffle=True, seed=21)
        whole = list(pyg.NeighborLoader(RUN["cora"]["one"], copy=True, **kw))
        steady = iter(pyg.NeighborLoader(RUN["cora"]["four"], **kw))
        for k, expect in enumerate(whole):
            got = next(steady)
            self.assertTrue(torch.equal(expect.n_id, got.n_id), f"batch {k}")
            if k == 2:
                leaving = pyg.NeighborLoader(RUN["cora"]["four"], **kw)
                for j, b in enumerate(leaving):  # joins mid-epoch, leaves after 3 batches
                    self.assertTrue(torch.equal(whole[j].x, b.x))
                    if j == 2:
                        break
                leaving.close()
        with self.assertRaises(StopIteration):
            next(steady)


def main():
    global ARGS, np, torch, featstore, pyg, pyg_sampler
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--featstore", required=True)
    p.add_argument("--lib", required=True)
    ARGS, rest = p.parse_known_args()
    if not fs_serve.etcd_bin():
        print("SKIP: no etcd installed (apt-get install etcd-server)")
        sys.exit(fs_serve.SKIP)
    fs_serve.require_pyg(os.path.dirname(os.path.dirname(HERE)))
    os.environ["FEATSTORE_LIB"] = ARGS.lib
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "client-lib", "python"))
    import numpy as np_
    import torch as torch_
    import featstore as featstore_
    import featstore.pyg as pyg_
    import torch_geometric.sampler as pyg_sampler_
    np, torch, featstore, pyg, pyg_sampler = np_, torch_, featstore_, pyg_, pyg_sampler_
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)


if __name__ == "__main__":
    main()
else:  # collected by pytest (tests/conftest.py): the build the environment names
    ARGS = fs_serve.pytest_args(("numpy", "torch", "torch_geometric"))
    if not fs_serve.etcd_bin():
        import pytest
        pytest.skip("no etcd installed (apt-get install etcd-server)", allow_module_level=True)
    import numpy as np
    import torch
    import featstore
    from featstore import pyg
    import torch_geometric.sampler as pyg_sampler
