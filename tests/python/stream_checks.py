"""stream_checks.py — what the Python stream tests share
(test_python_stream.py, test_python_stream_kinds.py): batches as copies of
their arrays, compared bit for bit, and a bounded wait.
"""
import time

try:
    import numpy as np
except ImportError:  # the tests importing this skip (exit 77) without numpy, before any check runs
    np = None


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
