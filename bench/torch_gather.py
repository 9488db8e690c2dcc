#!/usr/bin/python3
"""Peer baseline for bench_gather: torch.index_select on the same shapes.

Prints one line: `torch gbps=<GB/s> gbps_out=<GB/s>`. `gbps` is the call as
PyG and DGL make it, `x[idx]` / `torch.index_select(x, 0, idx)`: a fresh output
tensor per mini-batch, page faults included. `gbps_out` passes a pre-faulted
`out=` tensor, torch's best case. Run by bench_gather in the same run."""
import argparse
import time

import torch

p = argparse.ArgumentParser()
p.add_argument("--rows", type=int, required=True)
p.add_argument("--dim", type=int, required=True)
p.add_argument("--ids", type=int, required=True)
p.add_argument("--threads", type=int, required=True)
p.add_argument("--reps", type=int, default=3)
a = p.parse_args()

torch.set_num_threads(a.threads)
table = torch.empty((a.rows, a.dim), dtype=torch.float32)
table.copy_(torch.arange(a.rows, dtype=torch.float32).unsqueeze(1).expand(a.rows, a.dim))
gen = torch.Generator().manual_seed(1)
ids = torch.randint(0, a.rows, (a.ids,), generator=gen, dtype=torch.int64)
out = torch.empty((a.ids, a.dim), dtype=torch.float32)
out.zero_()  # fault the pages in before timing
best = best_out = float("inf")
for _ in range(a.reps):
    t0 = time.perf_counter()
    res = torch.index_select(table, 0, ids)
    t1 = time.perf_counter()
    torch.index_select(table, 0, ids, out=out)
    t2 = time.perf_counter()
    assert res[5, 0].item() == ids[5].item() and out[7, 0].item() == ids[7].item()
    del res
    best, best_out = min(best, t1 - t0), min(best_out, t2 - t1)
gb = a.ids * a.dim * 4 / 1e9
print(f"torch gbps={gb / best:.3f} gbps_out={gb / best_out:.3f}")
