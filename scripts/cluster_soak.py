#!/usr/bin/python3
"""cluster_soak.py — a replicated cluster under failure for a while, every
batch checked (issue 50; scripts/cluster_soak.sh runs it, ctest runs
--short as test_cluster_soak_short).

On loopback, with a private etcd: an R-MAT graph (--scale, 16 float32
features) partitioned into 8 parts and served by 4 shards at R = 2 (`serve
--parts auto --shards 4 --replicas 2`, each with a unix socket), and whole
by one server (unix://), the oracle. Trainer processes (--local of them
answer the shards' parts in process, --remote ones ask every shard over
gRPC) sample and gather [10, 5] batches of 64 random train roots with a
random seed from the cluster, and the same from the oracle, and compare
them: nodes, blocks and rows. Meanwhile the driver kills a shard (1, 2 or
3 in turn: shard 0 lives throughout, for its drift) with SIGKILL --kills
times, evenly spread, one at a time, and starts it again --down seconds
later (past its 2 s lease, so the map changes twice); kills etcd once
between two kills and starts it again on its data; and, a third and two
thirds of the way through the kills, adds a fifth shard (`serve --parts
assigned`, `featstore cluster add --wait`) and then drains it (`featstore
cluster drain --wait`; it stops by itself).

RESULT bench=cluster_soak seconds=... wrong_results=<batches unlike the oracle's> failed_batches=<calls that
       failed> batches=... stall_p99_s=<p99 of a batch's seconds, batches started within 1 s before to 6 s
       after a kill (the top of a 1.5x-wide bucket)> batch_p99_s=<the same over all batches> kills=... etcd_restarts=1
       shard_added=<copies the fifth shard took> shard_drained=<copies it gave back> map_changes=<maps the
       trainers' watch installed, summed> fd_drift=<largest trainer's fd count change from warm to end, as a
       fraction> rss_drift=<the same for its RSS> shard_fd_drift=<shard 0's, read once a second: the median
       of the last tenth against the first's> shard_rss_drift=<the same for its RSS>

    scripts/cluster_soak.sh [--short] [--seconds 600] [--kills 20] [--local 8] [--remote 4]

--short: 60 seconds, 2 kills (CI). Needs etcd (else exits 77: skipped),
python3-numpy and a build (--build). Exits 1 when a batch was wrong or
failed.
"""
import argparse
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))
import fs_serve  # noqa: E402

SHARDS, PARTS, FANOUTS, ROOTS = 4, 8, [10, 5], 64
# A batch's seconds go into one of these buckets per second of the run (a
# fixed table, so that the trainer's own memory does not grow with its
# batches): bucket i holds [1e-4 * 1.5^(i-1), 1e-4 * 1.5^i).
BUCKETS = 48


def bucket_of(seconds):
    import math
    return 0 if seconds <= 1e-4 else min(BUCKETS - 1, 1 + int(math.log(seconds / 1e-4, 1.5)))


def bucket_top(i):
    return 1e-4 * 1.5 ** i


# ---- a trainer (its own process) -------------------------------------------------------------

def same(a, b):
    """Two batches alike: nodes, every block's edges, the rows."""
    import numpy as np
    if not (np.array_equal(a.nodes, b.nodes) and np.array_equal(np.asarray(a.features), np.asarray(b.features))):
        return False
    return len(a.blocks) == len(b.blocks) and all(
        np.array_equal(x.dst_offsets, y.dst_offsets) and np.array_equal(x.edge_src, y.edge_src)
        for x, y in zip(a.blocks, b.blocks))


def trainer(args):
    sys.path.insert(0, os.path.join(ROOT, "client-lib", "python"))
    import featstore as fs
    import numpy as np
    rng = random.Random(args.rank * 7919 + 1)
    out = dict(batches=0, wrong=0, failed=0, errors=[])
    hist = np.zeros((args.seconds + 2, BUCKETS), np.int64)  # [second of the run][bucket]
    with fs.connect(args.uri) as c, fs.connect(args.oracle) as o:
        train = np.asarray(c.split("train"))
        t_start = time.time()
        t_end = t_start + args.seconds
        warm = None
        while time.time() < t_end:
            roots = np.array(rng.sample(range(len(train)), ROOTS))
            seeds, seed = train[roots], rng.randrange(1 << 40)
            t0 = time.time()
            try:
                b = c.sample_gather(seeds, FANOUTS, "feat", seed=seed)
            except fs.Error as e:
                out["failed"] += 1
                if len(out["errors"]) < 5:
                    out["errors"].append(str(e)[:300])
                continue
            hist[min(int(t0 - t_start), args.seconds + 1), bucket_of(time.time() - t0)] += 1
            with b, o.sample_gather(seeds, FANOUTS, "feat", seed=seed) as want:
                out["wrong"] += not same(b, want)
            out["batches"] += 1
            if warm is None and time.time() > t_end - args.seconds * 0.8:
                warm = proc_usage(os.getpid())
        end = proc_usage(os.getpid())
        stats = c.stats()
    for line in stats.splitlines():
        if line.startswith("featstore_trainer_map_updates_total "):
            out["map_updates"] = int(line.split()[1])
    warm = warm or end
    out["t_start"] = t_start
    out["hist"] = {str(i): row.tolist() for i, row in enumerate(hist) if row.any()}
    out["fd_drift"] = (end[0] - warm[0]) / max(warm[0], 1)
    out["rss_drift"] = (end[1] - warm[1]) / max(warm[1], 1)
    print("SOAK " + json.dumps(out), flush=True)


# ---- the driver ----------------------------------------------------------------------------------

class Etcd:
    """A private etcd on fixed loopback ports and data, so that it can be killed and started again."""

    def __init__(self, tmp):
        self.client, self.peer = fs_serve.free_port(), fs_serve.free_port()
        self.endpoint = "127.0.0.1:%d" % self.client
        self.cmd = [fs_serve.etcd_bin(), "--data-dir", os.path.join(tmp, "etcd"), "--listen-client-urls",
                    "http://" + self.endpoint, "--advertise-client-urls", "http://" + self.endpoint,
                    "--listen-peer-urls", "http://127.0.0.1:%d" % self.peer, "--initial-advertise-peer-urls",
                    "http://127.0.0.1:%d" % self.peer, "--initial-cluster",
                    "default=http://127.0.0.1:%d" % self.peer]
        self.start()

    def start(self):
        import socket
        self.proc = subprocess.Popen(self.cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                     preexec_fn=fs_serve.die_with_parent)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.client), timeout=1):
                    time.sleep(0.3)
                    return
            except OSError:
                time.sleep(0.1)
        raise RuntimeError("etcd did not answer within 20 s")

    def kill(self):
        self.proc.kill()
        self.proc.wait()


def shard(featstore, root, etcd, k, tmp, parts="auto"):
    cmd = [featstore, "serve", root, "--parts", parts, "--shards", str(SHARDS), "--replicas", "2", "--shard", str(k),
           "--listen", "127.0.0.1:0", "--cluster", "etcd://%s/soak" % etcd.endpoint, "--socket",
           os.path.join(tmp, "s%d.sock" % k)]
    if parts != "auto":
        del cmd[5:7]  # no --shards: the assignment gives its parts
    return fs_serve.spawn_ready(cmd, stderr=subprocess.DEVNULL)[0]


def proc_usage(pid):
    """A process's open descriptors, resident bytes and sockets."""
    with open("/proc/%d/statm" % pid) as f:
        rss = int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    fds = os.listdir("/proc/%d/fd" % pid)
    sockets = 0
    for fd in fds:
        try:
            sockets += os.readlink("/proc/%d/fd/%s" % (pid, fd)).startswith("socket:")
        except OSError:
            pass
    return len(fds), rss, sockets


class Usage(threading.Thread):
    """Shard 0's descriptors and RSS once a second (its gRPC connections come and go as
    trainers follow the map, so one reading is noise): drift() compares the medians of
    the first and last tenth of the readings."""

    def __init__(self, pid, seconds):
        super().__init__(daemon=True)
        self.pid, self.seconds, self.readings, self.stop = pid, seconds, [], threading.Event()
        self.start()

    def run(self):
        while not self.stop.wait(1.0) and len(self.readings) < self.seconds + 60:
            try:
                self.readings.append(proc_usage(self.pid))
            except OSError:
                return

    def drift(self):
        self.stop.set()
        self.join()
        r = self.readings
        if len(r) < 10:
            return 0.0, 0.0
        tenth = max(len(r) // 10, 3)
        first, last = r[:tenth], r[-tenth:]
        med = lambda xs, i: sorted(x[i] for x in xs)[len(xs) // 2]
        print("cluster_soak: shard 0, median by tenth of the run: fds %s; sockets %s; RSS MiB %s" % (
            [med(r[k * tenth:(k + 1) * tenth], 0) for k in range(len(r) // tenth)],
            [med(r[k * tenth:(k + 1) * tenth], 2) for k in range(len(r) // tenth)],
            [med(r[k * tenth:(k + 1) * tenth], 1) >> 20 for k in range(len(r) // tenth)]), file=sys.stderr)
        return tuple((med(last, i) - med(first, i)) / max(med(first, i), 1) for i in (0, 1))


def cluster(featstore, etcd, verb, k):
    """`featstore cluster VERB URI k --wait 60s`: the part copies it moved."""
    out = subprocess.run([featstore, "cluster", verb, "etcd://%s/soak" % etcd.endpoint, str(k), "--wait", "60s"],
                         capture_output=True, text=True, timeout=90)
    if out.returncode != 0:
        raise RuntimeError("featstore cluster %s %d: %s" % (verb, k, out.stdout + out.stderr))
    return int(re.search(r"(\d+) part copies move", out.stdout).group(1))


def grow_and_shrink(featstore, root, etcd, tmp, procs, i, kills):
    """After kill i: the fifth shard added (a third of the way) or drained (two thirds)."""
    if i == kills // 3:
        procs[SHARDS] = shard(featstore, root, etcd, SHARDS, tmp, parts="assigned")
        return "added", cluster(featstore, etcd, "add", SHARDS)
    if i == (2 * kills) // 3 and SHARDS in procs:
        moved = cluster(featstore, etcd, "drain", SHARDS)
        if procs[SHARDS].wait(timeout=30) != 0:
            raise RuntimeError("the drained shard exited %d" % procs[SHARDS].returncode)
        procs[SHARDS].stdout.close()
        del procs[SHARDS]
        return "drained", moved
    return None, 0


def driver(args):
    featstore = os.path.join(args.build, "cli", "featstore")
    os.environ["FEATSTORE_LIB"] = os.path.join(args.build, "client-lib", "libfeatstore.so")
    tmp = tempfile.mkdtemp(prefix="featstore-soak-")
    procs, trainers, etcd = {}, [], None
    try:
        data, root = os.path.join(tmp, "g"), os.path.join(tmp, "g.parts")
        subprocess.run([featstore, "gen", "rmat", "--scale", str(args.scale), "--edge-factor", "8", "--dim", "16",
                        "--out", data], check=True, stdout=subprocess.DEVNULL)
        subprocess.run([featstore, "partition", data, "--parts", str(PARTS), "--out", root], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        etcd = Etcd(tmp)
        procs["oracle"], ready = fs_serve.start(featstore, data, os.path.join(tmp, "whole.sock"),
                                                stderr=subprocess.DEVNULL)
        for k in range(SHARDS):
            procs[k] = shard(featstore, root, etcd, k, tmp)
        for r in range(args.local + args.remote):
            env = dict(os.environ, FEATSTORE_CLUSTER_LOCAL="1" if r < args.local else "0")
            trainers.append(subprocess.Popen(
                [sys.executable, os.path.abspath(__file__), "--role", "trainer", "--rank", str(r), "--seconds",
                 str(args.seconds), "--uri", "etcd://%s/soak" % etcd.endpoint, "--oracle", "unix://" + ready["unix"]],
                stdout=subprocess.PIPE, text=True, env=env, preexec_fn=fs_serve.die_with_parent))
        t0 = time.time()
        span = args.seconds * 0.8 / max(args.kills, 1)
        kills, etcd_at = [], t0 + args.seconds * 0.1 + span * (args.kills // 2) + span / 2
        etcd_done, moves, usage = False, {}, None
        for i in range(args.kills):
            at = t0 + args.seconds * 0.1 + span * i
            if not etcd_done and etcd_at < at:
                time.sleep(max(0, etcd_at - time.time()))
                etcd.kill()
                time.sleep(args.down)
                etcd.start()
                etcd_done = True
            time.sleep(max(0, at - time.time()))
            usage = usage or Usage(procs[0].pid, args.seconds)  # shard 0, warm: trainers have read its parts
            k = 1 + i % (SHARDS - 1)
            procs[k].kill()
            procs[k].wait()
            procs[k].stdout.close()
            kills.append(time.time())
            time.sleep(args.down)
            procs[k] = shard(featstore, root, etcd, k, tmp)
            what, moved = grow_and_shrink(featstore, root, etcd, tmp, procs, i, args.kills)
            if what:
                moves[what] = moved
        if not etcd_done:
            etcd.kill()
            time.sleep(args.down)
            etcd.start()
        shard_drift = usage.drift() if usage else (0.0, 0.0)
        results = []
        for t in trainers:
            out, _ = t.communicate(timeout=args.seconds + 120)
            line = [x for x in out.splitlines() if x.startswith("SOAK ")]
            if t.returncode != 0 or not line:
                raise RuntimeError("a trainer exited %s without its figures" % t.returncode)
            results.append(json.loads(line[0][5:]))
    finally:
        for t in trainers:
            if t.poll() is None:
                t.kill()
        for p in procs.values():
            fs_serve.stop(p)
        if etcd:
            etcd.kill()
        shutil.rmtree(tmp, ignore_errors=True)
    import numpy as np
    every, near = np.zeros(BUCKETS, np.int64), np.zeros(BUCKETS, np.int64)
    for r in results:
        for sec, row in r["hist"].items():
            t = r["t_start"] + int(sec)
            every += row
            if any(k - 1 <= t <= k + 6 for k in kills):
                near += row

    def p99(h):
        """The top of the bucket that holds the 99th percentile."""
        if not h.sum():
            return 0.0
        return bucket_top(int(np.searchsorted(np.cumsum(h), 0.99 * h.sum())))
    tot = {k: sum(r[k] for r in results) for k in ("batches", "wrong", "failed")}
    print("RESULT bench=cluster_soak seconds=%d wrong_results=%d failed_batches=%d batches=%d stall_p99_s=%.4f "
          "batch_p99_s=%.4f kills=%d etcd_restarts=1 shard_added=%d shard_drained=%d map_changes=%d fd_drift=%.3f "
          "rss_drift=%.3f shard_fd_drift=%.3f shard_rss_drift=%.3f trainers=%d"
          % (args.seconds, tot["wrong"], tot["failed"], tot["batches"], p99(near), p99(every), len(kills),
             moves.get("added", -1), moves.get("drained", -1), sum(r.get("map_updates", 0) for r in results),
             max(r["fd_drift"] for r in results), max(r["rss_drift"] for r in results),
             shard_drift[0], shard_drift[1], len(results)), flush=True)
    for r in results:
        for e in r["errors"]:
            print("cluster_soak: a failed batch: %s" % e, file=sys.stderr)
    return 1 if tot["wrong"] or tot["failed"] or tot["batches"] == 0 else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--role", choices=["driver", "trainer"], default="driver")
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--short", action="store_true", help="60 seconds and 2 kills (CI)")
    ap.add_argument("--seconds", type=int, default=None, help="default 600, or 60 with --short")
    ap.add_argument("--kills", type=int, default=None, help="default 20, or 2 with --short")
    ap.add_argument("--down", type=float, default=3.0, help="seconds a killed shard (and etcd) stays down")
    ap.add_argument("--local", type=int, default=8, help="trainers answering the shards' parts in process")
    ap.add_argument("--remote", type=int, default=4, help="trainers asking every shard over gRPC")
    ap.add_argument("--scale", type=int, default=12)
    ap.add_argument("--rank", type=int, default=0)
    ap.add_argument("--uri")
    ap.add_argument("--oracle")
    args = ap.parse_args()
    if args.role == "trainer":
        return trainer(args)
    args.seconds = args.seconds or (60 if args.short else 600)
    args.kills = args.kills if args.kills is not None else (2 if args.short else 20)
    if not fs_serve.etcd_bin():
        print("cluster_soak: no etcd installed: skipped", file=sys.stderr)
        return 77
    return driver(args)


if __name__ == "__main__":
    sys.exit(main())
