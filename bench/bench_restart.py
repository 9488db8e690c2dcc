#!/usr/bin/python3
"""bench_restart.py — how soon a restarted shard serves its parts again
(issue 50: "with R = 1, a killed shard's partitions are served again within
10 s of its restart, 1 GB partition").

A private etcd on loopback and a cluster of 2 shards at R = 1, each holding
one part of --dataset partitioned in 2 (by default R-MAT scale 21 with 128
float32 features: about 1 GiB of rows a part). A trainer (this process,
etcd://) samples and gathers a batch whose seeds lie in both parts. Then,
--rounds times: shard 1 is killed with SIGKILL, its lease left to lapse (the
map shows its part without a holder), and it is started again (t0); the
trainer asks for the same batch every 20 ms until it comes back equal to
the first (t1). With --cold the page cache is dropped before the restart
(root), so the part is read from the disk.

RESULT bench=cluster_restart part_bytes=<shard 1's part on disk> ready_s=<t0 to the shard's READY line>
       served_again_s=<t0 to t1> cold=0|1 ratio_vs_10s=<served_again_s / 10> round=K

    bench/bench_restart.py [--dataset DIR] [--rounds 3] [--cold]

Needs etcd, python3-numpy and a build (--build).
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))
import fs_serve  # noqa: E402


def dir_bytes(path):
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(path) for f in fs)


def prepare(args, featstore):
    """The dataset (generated when not given) and its 2-part partitioning: the root."""
    data = args.dataset or os.path.join(args.workdir, "rmat-s%d-d%d" % (args.scale, args.dim))
    if not os.path.exists(os.path.join(data, "manifest.json")):
        subprocess.run([featstore, "gen", "rmat", "--scale", str(args.scale), "--edge-factor", "8", "--dim",
                        str(args.dim), "--out", data], check=True, stdout=subprocess.DEVNULL)
    root = data.rstrip("/") + ".parts2"
    if not os.path.exists(os.path.join(root, "partition.json")):
        subprocess.run([featstore, "partition", data, "--parts", "2", "--out", root], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return root


def wait_unowned(client, seeds, limit):
    """Until a batch over shard 1's part fails (its lease lapsed, or its
    address refuses): the cluster knows it is gone."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < limit:
        try:
            client.split_by_owner(seeds)
        except Exception:  # noqa: BLE001 - featstore.Error: a part without a shard
            return
        time.sleep(0.05)
    raise RuntimeError("shard 1's part still has a holder %.0f s after the kill" % limit)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--dataset", help="a featstore dataset (default: R-MAT --scale, --dim, generated)")
    ap.add_argument("--scale", type=int, default=21)
    ap.add_argument("--dim", type=int, default=128)
    ap.add_argument("--workdir", default="/tmp/featstore-bench/restart")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--cold", action="store_true", help="drop the page cache before each restart (root)")
    ap.add_argument("--timeout", type=float, default=120, help="seconds a restart may take before it counts as failed")
    args = ap.parse_args()
    featstore = os.path.join(args.build, "cli", "featstore")
    os.environ["FEATSTORE_LIB"] = os.path.join(args.build, "client-lib", "libfeatstore.so")
    os.environ["FEATSTORE_CACHE_MB"] = "0"  # every row from its shard
    sys.path.insert(0, os.path.join(ROOT, "client-lib", "python"))
    import featstore as fs
    import numpy as np
    os.makedirs(args.workdir, exist_ok=True)
    root = prepare(args, featstore)
    part_bytes = dir_bytes(os.path.join(root, "part-00001"))
    tmp = tempfile.mkdtemp(prefix="featstore-restart-")
    procs = {}
    try:
        procs["etcd"], etcd = fs_serve.start_etcd(tmp)
        for k in (0, 1):
            procs[k] = fs_serve.start_shard(featstore, root, str(k), etcd, "restart", k, stderr=subprocess.DEVNULL)[0]
        with fs.connect("etcd://%s/restart" % etcd) as c:
            train = c.split("train")
            groups = c.split_by_owner(train[:4096])
            seeds = np.concatenate([s[:256] for s in groups.seeds])
            mine = groups.seeds[groups.group_of(1)][:64]  # shard 1's
            with c.sample_gather(seeds, [10, 5], "feat", seed=1) as b:
                want = np.array(b.features)
            for r in range(args.rounds):
                procs[1].kill()
                procs[1].wait()
                procs[1].stdout.close()
                wait_unowned(c, mine, 30)
                if args.cold:
                    subprocess.run(["sync"], check=True)
                    with open("/proc/sys/vm/drop_caches", "w") as f:
                        f.write("3\n")
                t0 = time.monotonic()
                procs[1] = fs_serve.start_shard(featstore, root, "1", etcd, "restart", 1, stderr=subprocess.DEVNULL)[0]
                ready = time.monotonic() - t0
                served = None
                while time.monotonic() - t0 < args.timeout:
                    try:
                        with c.sample_gather(seeds, [10, 5], "feat", seed=1) as b:
                            if np.array_equal(np.array(b.features), want):
                                served = time.monotonic() - t0
                                break
                    except fs.Error:
                        pass
                    time.sleep(0.02)
                if served is None:
                    raise RuntimeError("round %d: the batch did not come back within %.0f s" % (r, args.timeout))
                print("RESULT bench=cluster_restart part_bytes=%d ready_s=%.2f served_again_s=%.2f cold=%d "
                      "ratio_vs_10s=%.3f round=%d" % (part_bytes, ready, served, int(args.cold), served / 10, r),
                      flush=True)
    finally:
        for p in procs.values():
            fs_serve.stop(p)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
