#!/usr/bin/python3
"""cora.py — two real featstore datasets made from Cora with
``featstore.write_dataset`` (numpy only; no PyG, no compiled featstore),
the datasets the typed and link examples train on::

    /usr/bin/python3 examples/cora.py typed OUT [--split planetoid|TRAIN,VALID,TEST] [--seed 0]
    /usr/bin/python3 examples/cora.py link OUT [--seed 0] [--neg 1]

(the featstore package is taken from ``client-lib/python`` when run from
the repository; the tests import it as a module). Both read the
gnn-benchmark ``cora.npz`` (Shchur et al.; ``--npz``, default the
repository's ``tests/data/cora.npz``): 2708 papers, 7 classes, 1433
bag-of-words features, and 5429 citations as a CSR adjacency in which row
r, column c means *paper c cites paper r* (LINQS ``cora.cites`` order, "cited
citing": the paper with LINQS id 35, the most cited, has 166 entries in its
row and 3 in its column; no paper has more than 5 in its column).
Dropping direction and duplicates leaves 5278 undirected citation edges
(PyG's Planetoid Cora has 10556 = 2 x 5278 directed ones); there are no
self-loops. The npz ships no splits.

``typed`` — Cora as a heterogeneous graph (``name`` "cora-typed"):

- node type ``paper`` (2708): table ``feat`` float32 [2708, 1433] (the 0/1
  bag of words), labels (7 classes), splits ``train``/``valid``/``test``:
  the npz's own when it has them (``idx_train``/``idx_val``/``idx_test`` or
  masks), else seeded: ``planetoid`` (default) = 20 papers per class for
  training, 500 for validation, 1000 for test, drawn from one seeded
  permutation like PyG's ``RandomNodeSplit(num_train_per_class=20,
  num_val=500, num_test=1000)`` (the public Planetoid split is in another
  node order and does not apply), or percentages ``60,20,20`` of all papers.
- node type ``word`` (1433): no features (a model gives words learned
  embeddings, as PyG models do for featureless types).
- ``(paper, cites, paper)``: the 5429 citations as given; edge i is the
  npz's i-th adjacency entry (row-major), from citing to cited paper, so
  each paper's stored sources are its citers. Reverse ``(paper, cited_by,
  paper)``.
- ``(paper, has, word)``: 49216 edges, one per nonzero bag-of-words entry,
  weight = the entry's value (all 1 in cora.npz); edge i is the i-th
  nonzero of the feature CSR. Reverse ``(word, in, paper)``.

``link`` — Cora's citations for link prediction, GAE style (``name``
"cora-link"):

- node type ``paper``: table ``feat``, labels (for node-level use; no node
  splits).
- the 5278 undirected edges, shuffled with ``--seed``, split 85/5/10:
  ``valid`` floor(5%) = 263, ``test`` floor(10%) = 527, ``train`` the rest
  (4488). Each split edge appears once, in a seeded random orientation.
- edge type ``(paper, cites, paper)``: the train edges only, stored both ways
  (8976 edges; edge i and edge i + 4488 are train edge i's two directions),
  so message passing never sees a valid or test edge; marked undirected
  (``featstore info``: "undirected"). One node type and one
  edge type: ``featstore serve`` serves it as a homogeneous graph.
- link splits ``train``/``valid``/``test`` over that edge type: ``src``,
  ``dst``. ``train`` has no given negatives (sample fresh ones every epoch);
  ``valid`` and ``test`` have ``neg_dst`` [k, ``--neg``]: destinations
  paired with the row's ``src``, never an edge of the full graph in either
  direction, never a self-loop, and no unordered negative pair used twice
  (so valid and test negatives are disjoint). With ``--neg 1`` (default)
  each split has as many negative as positive pairs: GAE's evaluation (AUC
  and AP over k positives and k negatives); a larger ``--neg`` gives
  per-positive candidates for ranking metrics (MRR, Hits@K).

Both are pure functions of the npz and the options: two runs are
byte-identical.
"""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "client-lib", "python"))
from featstore import write_dataset  # noqa: E402

# the repository's copy: examples/ -> tests/data/cora.npz
DEFAULT_NPZ = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data",
                                            "cora.npz"))
SPLIT_KEYS = {"train": ("idx_train", "train_idx", "train_mask"),
              "valid": ("idx_val", "val_idx", "val_mask", "valid_idx"),
              "test": ("idx_test", "test_idx", "test_mask")}


def load(npz=DEFAULT_NPZ):
    """cora.npz's arrays: citations (cited, citing) in entry order, the bag of
    words as a CSR, labels and any shipped splits."""
    with np.load(npz, allow_pickle=False) as z:  # object members (idx_to_node, ...) are never read
        ip, ix = z["adj_indptr"].astype(np.int64), z["adj_indices"].astype(np.int64)
        n = int(z["adj_shape"][0]) if "adj_shape" in z.files else len(ip) - 1
        g = {"num_papers": n, "cited": np.repeat(np.arange(n, dtype=np.int64), np.diff(ip)), "citing": ix}
        g["attr_indptr"] = z["attr_indptr"].astype(np.int64)
        g["attr_indices"] = z["attr_indices"].astype(np.int64)
        g["attr_data"] = z["attr_data"].astype(np.float32)
        g["num_words"] = int(z["attr_shape"][1])
        g["labels"] = z["labels"].astype(np.int64)
        g["splits"] = {}
        for name, keys in SPLIT_KEYS.items():
            for k in keys:
                if k in z.files:
                    a = z[k]
                    g["splits"][name] = np.flatnonzero(a) if a.dtype == bool else a.astype(np.int64)
                    break
    return g


def features(g):
    x = np.zeros((g["num_papers"], g["num_words"]), np.float32)
    rows = np.repeat(np.arange(g["num_papers"]), np.diff(g["attr_indptr"]))
    x[rows, g["attr_indices"]] = g["attr_data"]
    return x


def node_splits(labels, how, seed):
    """Seeded splits of the papers: "planetoid" (20 per class / 500 / 1000) or
    "a,b,c" percentages."""
    rng = np.random.default_rng(seed)
    perm = rng.permutation(len(labels))
    if how == "planetoid":
        train = np.concatenate([perm[labels[perm] == c][:20] for c in range(int(labels.max()) + 1)])
        rest = perm[~np.isin(perm, train)]
        return {"train": np.sort(train), "valid": np.sort(rest[:500]), "test": np.sort(rest[500:1500])}
    try:
        pct = [int(p) for p in how.split(",")]
    except ValueError:
        pct = []
    if len(pct) != 3 or min(pct) < 0 or sum(pct) > 100:
        raise ValueError(f"--split {how!r}: give planetoid or three percentages TRAIN,VALID,TEST summing to <= 100")
    a = len(perm) * pct[0] // 100
    b = a + len(perm) * pct[1] // 100
    c = b + len(perm) * pct[2] // 100
    return {"train": np.sort(perm[:a]), "valid": np.sort(perm[a:b]), "test": np.sort(perm[b:c])}


def write_typed(out, npz=DEFAULT_NPZ, split="planetoid", seed=0, force=False):
    g = load(npz)
    splits = g["splits"] or node_splits(g["labels"], split, seed)
    has_src = np.repeat(np.arange(g["num_papers"], dtype=np.int64), np.diff(g["attr_indptr"]))
    return write_dataset(
        out,
        node_types={"paper": {"count": g["num_papers"], "features": {"feat": features(g)}, "labels": g["labels"],
                              "num_classes": int(g["labels"].max()) + 1, "splits": splits},
                    "word": {"count": g["num_words"]}},
        edge_types={("paper", "cites", "paper"): {"edge_index": np.stack([g["citing"], g["cited"]]),
                                                  "reverse": "cited_by"},
                    ("paper", "has", "word"): {"edge_index": np.stack([has_src, g["attr_indices"]]),
                                               "weights": g["attr_data"], "reverse": "in"}},
        name="cora-typed", force=force,
        source={"maker": "examples/cora.py typed", "input": os.path.basename(npz),
                "splits": "shipped" if g["splits"] else split, "seed": seed})


def undirected_edges(g):
    """The citations without direction or duplicates: [U, 2], u < v, sorted."""
    u, v = np.minimum(g["cited"], g["citing"]), np.maximum(g["cited"], g["citing"])
    keep = u != v
    key = np.unique(u[keep] * g["num_papers"] + v[keep])
    return np.stack([key // g["num_papers"], key % g["num_papers"]], axis=1)


def sample_negatives(rng, src, m, n, taken):
    """neg[k, m]: for each src a destination w != src with {src, w} not in
    `taken` (unordered pair keys min * n + max, updated) and no pair twice."""
    neg = np.empty((len(src), m), np.int64)
    todo = np.ones(neg.shape, bool)
    rows = np.repeat(np.asarray(src, np.int64)[:, None], m, axis=1)
    while todo.any():
        cand = rng.integers(0, n, int(todo.sum()))
        s = rows[todo]
        key = np.minimum(s, cand) * n + np.maximum(s, cand)
        ok = (s != cand) & ~np.isin(key, np.fromiter(taken, np.int64, len(taken)))
        _, first = np.unique(key, return_index=True)  # one of several equal new pairs
        once = np.zeros(len(key), bool)
        once[first] = True
        ok &= once
        idx = np.flatnonzero(todo.reshape(-1))[ok]
        neg.reshape(-1)[idx] = cand[ok]
        taken.update(key[ok].tolist())
        todo.reshape(-1)[idx] = False
    return neg


def write_link(out, npz=DEFAULT_NPZ, seed=0, neg=1, force=False):
    if neg < 1:
        raise ValueError("--neg must be >= 1")
    g = load(npz)
    n = g["num_papers"]
    und = undirected_edges(g)
    rng = np.random.default_rng(seed)
    und = und[rng.permutation(len(und))]
    flip = rng.random(len(und)) < 0.5
    und[flip] = und[flip][:, ::-1]
    n_valid, n_test = len(und) * 5 // 100, len(und) * 10 // 100
    valid, test, train = und[:n_valid], und[n_valid:n_valid + n_test], und[n_valid + n_test:]
    taken = set((np.minimum(und[:, 0], und[:, 1]) * n + np.maximum(und[:, 0], und[:, 1])).tolist())
    neg_valid = sample_negatives(rng, valid[:, 0], neg, n, taken)
    neg_test = sample_negatives(rng, test[:, 0], neg, n, taken)
    both = np.concatenate([train, train[:, ::-1]]).T
    return write_dataset(
        out,
        node_types={"paper": {"count": n, "features": {"feat": features(g)}, "labels": g["labels"],
                              "num_classes": int(g["labels"].max()) + 1}},
        edge_types={("paper", "cites", "paper"): {"edge_index": both}},
        link_splits={"train": {"edge_type": ("paper", "cites", "paper"), "src": train[:, 0], "dst": train[:, 1]},
                     "valid": {"edge_type": ("paper", "cites", "paper"), "src": valid[:, 0], "dst": valid[:, 1],
                               "neg_dst": neg_valid},
                     "test": {"edge_type": ("paper", "cites", "paper"), "src": test[:, 0], "dst": test[:, 1],
                              "neg_dst": neg_test}},
        name="cora-link", force=force, undirected=True,
        source={"maker": "examples/cora.py link", "input": os.path.basename(npz), "seed": seed,
                "split": "85/5/10 of undirected edges", "negatives_per_positive": neg})


def main(argv=None):
    p = argparse.ArgumentParser(prog="examples/cora.py",
                                description="Make featstore datasets from Cora (see the module's docstring).")
    sub = p.add_subparsers(dest="kind", required=True)
    t = sub.add_parser("typed", help="Cora as a typed graph: paper, word; cites, has (+ reverses)")
    t.add_argument("out")
    t.add_argument("--split", default="planetoid", help="planetoid (default) or TRAIN,VALID,TEST percentages; "
                   "used only when the npz ships no splits")
    ln = sub.add_parser("link", help="Cora's citations for link prediction (85/5/10, GAE-style negatives)")
    ln.add_argument("out")
    ln.add_argument("--neg", type=int, default=1, help="given negatives per valid/test positive (default 1)")
    for s in (t, ln):
        s.add_argument("--seed", type=int, default=0)
        s.add_argument("--npz", default=DEFAULT_NPZ, help="a gnn-benchmark cora.npz (default: tests/data/cora.npz)")
        s.add_argument("--force", action="store_true", help="replace OUT if it is a featstore dataset")
    a = p.parse_args(argv)
    try:
        if a.kind == "typed":
            path = write_typed(a.out, a.npz, a.split, a.seed, a.force)
        else:
            path = write_link(a.out, a.npz, a.seed, a.neg, a.force)
    except (ValueError, OSError) as e:
        print(f"cora.py: {str(e).replace('force=True', '--force')}", file=sys.stderr)
        return 1
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
