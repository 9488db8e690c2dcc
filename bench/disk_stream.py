#!/usr/bin/python3
"""disk_stream.py — does loading from disk hide behind compute? A table on
disk (the probe's dataset of bench/disk_probe.py, `serve --mem-budget`),
read by a unix:// trainer that "computes" `--compute-ms` per batch (a
sleep: the core is free, as while a GPU trains): synchronous sample_gather
calls, where each batch's disk reads wait for the step before, against a
node_stream, whose producers sample and read the next batches while the
step runs.

    RESULT bench=disk_stream compute_ms=... sync_batches_per_s=... stream_batches_per_s=...
           stream_visible_load_ms=... ratio_stream_vs_compute_bound=...

ratio_stream_vs_compute_bound is the stream's batches/s over 1000/compute_ms:
1.0 when loading is wholly hidden.

    /usr/bin/python3 bench/disk_stream.py --dataset /var/tmp/featstore-disk-probe/rmat-s22-d320 --mem-budget 2G
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "client-lib", "python"))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--dataset", required=True)
    p.add_argument("--mem-budget", default="2G")
    p.add_argument("--compute-ms", type=float, default=300)
    p.add_argument("--batches", type=int, default=20)
    a = p.parse_args()
    os.environ.setdefault("FEATSTORE_LIB", os.path.join(a.build, "client-lib", "libfeatstore.so"))
    import numpy as np
    import featstore
    tmp = tempfile.mkdtemp(prefix="fs-disk-stream-")
    log = open(os.path.join(tmp, "serve.log"), "w")
    proc = subprocess.Popen([os.path.join(a.build, "cli", "featstore"), "serve", a.dataset, "--socket",
                             os.path.join(tmp, "sock"), "--metrics", "127.0.0.1:0", "--mem-budget", a.mem_budget],
                            stdout=subprocess.PIPE, stderr=log)
    try:
        line = proc.stdout.readline().decode()
        if not line.startswith("READY"):
            sys.exit(f"disk_stream: the server did not start: see {log.name}")
        uri = "unix://" + os.path.join(tmp, "sock")
        step = a.compute_ms / 1000
        with featstore.connect(uri) as c:
            train = c.split("train")
            rng = np.random.default_rng(1)
            t0 = time.perf_counter()
            for b in range(a.batches):
                batch = c.sample_gather(rng.choice(train, 1024, replace=False), [15, 10, 5], "feat", seed=b)
                batch.release()
                time.sleep(step)
            sync = a.batches / (time.perf_counter() - t0)
            s = c.node_stream("train", batch_size=1024, num_neighbors=[15, 10, 5], table="feat", seed=2)
            waited, n = 0.0, 0
            t0 = time.perf_counter()
            it = iter(s)
            while n < a.batches:
                w0 = time.perf_counter()
                batch = next(it)
                waited += time.perf_counter() - w0
                batch.release()
                time.sleep(step)
                n += 1
            streamed = n / (time.perf_counter() - t0)
            s.close()
        print(f"RESULT bench=disk_stream compute_ms={a.compute_ms:.0f} sync_batches_per_s={sync:.2f} "
              f"stream_batches_per_s={streamed:.2f} stream_visible_load_ms={1000 * waited / n:.1f} "
              f"ratio_stream_vs_compute_bound={streamed * step:.3f}", flush=True)
    finally:
        proc.terminate()
        proc.wait(timeout=60)
        log.close()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
