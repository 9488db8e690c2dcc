#!/usr/bin/python3
"""disk_probe.py — a dataset larger than memory, served as a user would
serve it (issue 51's probe): R-MAT of 2^scale nodes with `dim` float32
features, `featstore serve` with default options and `featstore-trainer`
doing [15,10,5] x 1024 sample_gather over unix:// (or --transport grpc),
both in one memory cgroup of
`--limit` bytes (root; cgroup v1 or v2), or with `--mem-budget` where
cgroups are missing.

Prints, in one run:
  RESULT bench=disk_probe cold_read_s=... first_start_s=... second_start_s=...
         ratio_second_start_vs_cold_read=...
  RESULT bench=disk_probe_trainer batches_per_s=... peak_memory_bytes=... limit_bytes=... killed=0|1
         in_memory_batches_per_s=... ratio_vs_in_memory=...

cold_read_s: every file of the dataset read once, sequentially, the page
cache dropped first (drop_caches as root, else the files' pages with
POSIX_FADV_DONTNEED); the starts are timed to the READY line, the cache
dropped before each; peak_memory_bytes is the cgroup's while serving (the
second start and the trainer; memory.max_usage_in_bytes reset after the
first start, which builds the checksums; its own peak is
first_start_peak_bytes). The baseline is the
same trainer against the same server with no limit and no budget: the
whole dataset in memory (it needs that much free).

    sudo /usr/bin/python3 bench/disk_probe.py --scale 22 --dim 320 --limit 3G --dir /var/tmp/probe
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def size(text):
    m = re.fullmatch(r"([0-9.]+)([KMGT]?)", text)
    if not m:
        raise argparse.ArgumentTypeError(f"not a size: {text}")
    return int(float(m.group(1)) * 1024 ** " KMGT".index(m.group(2) or " "))


def drop_pages(d):
    """The files' pages out of memory: every clean page as root (drop_caches), else the files' own."""
    os.sync()
    try:
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3")
        return
    except OSError:
        pass
    for f in os.listdir(d):
        with open(os.path.join(d, f), "rb") as fh:
            os.posix_fadvise(fh.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)


def cold_read(d):
    drop_pages(d)
    t0 = time.perf_counter()
    for f in sorted(os.listdir(d)):
        if f.endswith(".rowsums"):
            continue
        with open(os.path.join(d, f), "rb", buffering=0) as fh:
            while fh.read(8 << 20):
                pass
    return time.perf_counter() - t0


class Cgroup:
    """A memory cgroup of `limit` bytes (v2 or v1); None where it cannot be made."""

    def __init__(self, limit):
        self.path = self.v2 = None
        for base, v2 in (("/sys/fs/cgroup", True), ("/sys/fs/cgroup/memory", False)):
            probe = os.path.join(base, "cgroup.controllers" if v2 else "memory.limit_in_bytes")
            if not os.path.exists(probe):
                continue
            path = os.path.join(base, f"featstore-probe-{os.getpid()}")
            try:
                os.mkdir(path)
                with open(os.path.join(path, "memory.max" if v2 else "memory.limit_in_bytes"), "w") as f:
                    f.write(str(limit))
                self.path, self.v2 = path, v2
                return
            except OSError:
                if os.path.isdir(path):
                    os.rmdir(path)

    def preexec(self):
        path = self.path

        def enter():
            with open(os.path.join(path, "cgroup.procs"), "w") as f:
                f.write(str(os.getpid()))
        return enter

    def reset_peak(self):
        """Starts the peak again from now (v1: memory.max_usage_in_bytes; v2's memory.peak cannot be)."""
        p = os.path.join(self.path, "memory.max_usage_in_bytes")
        if os.path.exists(p):
            with open(p, "w") as f:
                f.write("0")

    def peak(self):
        for name in ("memory.peak", "memory.max_usage_in_bytes"):
            p = os.path.join(self.path, name)
            if os.path.exists(p):
                return int(open(p).read())
        return -1

    def stat(self):
        """The cgroup's memory by kind (memory.stat): what the peak was made of."""
        p = os.path.join(self.path, "memory.stat")
        want = ("cache", "rss", "shmem", "mapped_file", "anon", "file")
        out = {}
        for line in open(p).read().splitlines() if os.path.exists(p) else []:
            k, _, v = line.partition(" ")
            if k in want:
                out[k] = int(v)
        return " ".join(f"{k}={v}" for k, v in out.items())

    def oom_kills(self):
        p = os.path.join(self.path, "memory.events" if self.v2 else "memory.oom_control")
        text = open(p).read() if os.path.exists(p) else ""
        m = re.search(r"oom_kill (\d+)", text)
        return int(m.group(1)) if m else 0

    def remove(self):
        if self.path:
            for _ in range(50):
                try:
                    os.rmdir(self.path)
                    return
                except OSError:
                    time.sleep(0.1)


def start_server(featstore, data, tmp, extra, preexec):
    log = open(os.path.join(tmp, "serve.log"), "a")
    t0 = time.perf_counter()
    proc = subprocess.Popen([featstore, "serve", data, "--socket", os.path.join(tmp, "sock"), "--listen",
                             "127.0.0.1:0", "--metrics", "127.0.0.1:0"] + extra, stdout=subprocess.PIPE, stderr=log,
                            preexec_fn=preexec)
    line = proc.stdout.readline().decode()
    if not line.startswith("READY"):
        raise RuntimeError(f"featstore serve did not start (status {proc.wait()}): see {log.name}")
    return proc, time.perf_counter() - t0, dict(f.split("=", 1) for f in line.split()[1:])


def stop(proc):
    proc.terminate()
    proc.wait(timeout=60)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--dir", default="/var/tmp/featstore-disk-probe")
    p.add_argument("--scale", type=int, default=22)
    p.add_argument("--dim", type=int, default=320)
    p.add_argument("--limit", type=size, default=size("3G"))
    p.add_argument("--mem-budget", default=None, help="where no cgroup can be made")
    p.add_argument("--batches", type=int, default=30)
    p.add_argument("--transport", choices=("unix", "grpc"), default="unix")
    p.add_argument("--copy", default=None, help="serve --copy (default: the server's own choice)")
    a = p.parse_args()
    featstore = os.path.join(a.build, "cli", "featstore")
    trainer = os.path.join(a.build, "examples", "featstore-trainer")
    data = os.path.join(a.dir, f"rmat-s{a.scale}-d{a.dim}")
    if not os.path.exists(os.path.join(data, "manifest.json")):
        os.makedirs(a.dir, exist_ok=True)
        subprocess.run([featstore, "gen", "rmat", "--scale", str(a.scale), "--dim", str(a.dim), "--symmetrize",
                        "--out", data, "--force"], check=True, stdout=subprocess.DEVNULL)
    for f in os.listdir(data):
        if f.endswith(".rowsums"):
            os.remove(os.path.join(data, f))  # the first start builds them
    tmp = os.path.join(a.dir, "run")
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    cold = cold_read(data)
    cg = Cgroup(a.limit)
    if not cg.path and not a.mem_budget:
        sys.exit("disk_probe: no memory cgroup could be made (not root?): give --mem-budget instead")
    extra = (["--mem-budget", a.mem_budget] if a.mem_budget else []) + (["--copy", a.copy] if a.copy else [])
    preexec = cg.preexec() if cg.path else None
    try:
        drop_pages(data)
        proc, first, _ = start_server(featstore, data, tmp, extra, preexec)
        stop(proc)
        first_peak = cg.peak() if cg.path else -1
        if cg.path:
            cg.reset_peak()  # the serving peak: the second start and the trainer
        drop_pages(data)
        proc, second, ready = start_server(featstore, data, tmp, extra, preexec)
        print(f"RESULT bench=disk_probe scale={a.scale} dim={a.dim} cold_read_s={cold:.2f} first_start_s={first:.2f} "
              f"second_start_s={second:.2f} ratio_second_start_vs_cold_read={second / cold:.3f}", flush=True)
        uri = f"unix://{ready['unix']}" if a.transport == "unix" else f"grpc://{ready['grpc']}"
        t = subprocess.run([trainer, uri, "--batches", str(a.batches)], capture_output=True, text=True,
                           preexec_fn=preexec, timeout=3600)
        m = re.search(r"batches_per_s=([0-9.]+)", t.stdout)
        alive = proc.poll() is None
        if cg.path:
            print(f"disk_probe: the cgroup after the trainer: {cg.stat()}", file=sys.stderr, flush=True)
        stop(proc) if alive else None
        killed = int(not alive or t.returncode != 0 or (cg.path and cg.oom_kills() > 0))
        if not m:
            print(t.stdout, t.stderr, file=sys.stderr)
        proc, _, ready = start_server(featstore, data, tmp, [], None)  # the baseline: everything in memory
        uri = f"unix://{ready['unix']}" if a.transport == "unix" else f"grpc://{ready['grpc']}"
        base = subprocess.run([trainer, uri, "--batches", str(a.batches)], capture_output=True, text=True,
                              timeout=3600)
        stop(proc)
        b = re.search(r"batches_per_s=([0-9.]+)", base.stdout)
        got, mem = float(m.group(1)) if m else 0.0, float(b.group(1)) if b else 0.0
        print(f"RESULT bench=disk_probe_trainer transport={a.transport} batches_per_s={got:.2f} peak_memory_bytes={cg.peak() if cg.path else -1} "
              f"limit_bytes={a.limit if cg.path else -1} first_start_peak_bytes={first_peak} killed={killed} "
              f"in_memory_batches_per_s={mem:.2f} "
              f"ratio_vs_in_memory={got / mem if mem else 0:.3f}", flush=True)
    finally:
        cg.remove()
    print(open(os.path.join(tmp, "serve.log")).read(), file=sys.stderr)


if __name__ == "__main__":
    main()
