#!/usr/bin/python3
"""soak.py — soak and chaos run against a live `featstore serve` (scripts/soak.sh).

    scripts/soak.sh [--short] [--seconds N] [--local 16] [--grpc 4] [--kills 100] [--build build]

Generates an R-MAT dataset, keeps a pristine copy of it that nothing
touches, starts the server (unix:// socket and a fixed gRPC port, so clients
find it again after a restart) and N local + M gRPC trainers
(tests/integration/soak/soak_client.c), each checking every batch against the pristine copy.
During the run (10 minutes, or 60 s with --short) it

- kills a random trainer with SIGKILL, mid-request, `--kills` times, and
  starts a new one in its place;
- truncates the served feature file to half, then replaces it (by rename)
  with a good copy;
- restarts the server once (SIGTERM, then a new `featstore serve`); the
  trainers reconnect by themselves.

It watches the server every 0.5 s: an exit it did not ask for is a crash
(counted, and the server is started again). At the end it prints

    RESULT bench=soak seconds=… wrong_results=… server_crashes=… client_crashes=…
           rss_drift_pct=… fd_leak=… reconnects=… kills=… batches=… errors=…

wrong_results: batches that disagreed with the dataset. client_crashes:
trainers that died without being killed by the soak (e.g. SIGBUS).
rss_drift_pct: the server's resident memory from the end of warm-up (15% of
each server's half of the run) to its last sample, the larger of the two.
fd_leak: the restarted server's open descriptors after every trainer has
gone, minus the first server's before any came. Exit 0 when wrong_results,
server_crashes, client_crashes and fd_leak are all 0.
"""
import argparse
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))
import fs_serve  # noqa: E402  (the tests' server helper)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rss_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        return int(re.search(r"VmRSS:\s+(\d+)", f.read()).group(1))


def open_fds(pid):
    return len(os.listdir(f"/proc/{pid}/fd"))


class Trainers:
    """The trainer processes, each with a log file of its own."""

    def __init__(self, client, pristine, logdir):
        self.client, self.pristine, self.logdir = client, pristine, logdir
        self.procs, self.spawned, self.crashed = [], 0, []

    def spawn(self, uri):
        self.spawned += 1
        log = open(os.path.join(self.logdir, f"trainer-{self.spawned}.log"), "w")
        p = subprocess.Popen([self.client, uri, self.pristine, str(self.spawned)], stdout=log,
                             stderr=subprocess.STDOUT, preexec_fn=fs_serve.die_with_parent)
        log.close()
        self.procs.append((p, uri))

    def reap(self):
        """Trainers that exited on their own are crashes; they are replaced."""
        for p, uri in list(self.procs):
            if p.poll() is not None:
                self.crashed.append(p.returncode)
                self.procs.remove((p, uri))
                self.spawn(uri)

    def kill_one(self, rng):
        p, uri = rng.choice(self.procs)
        self.procs.remove((p, uri))
        p.kill()
        p.wait()
        self.spawn(uri)

    def stop(self):
        self.reap()
        for p, _ in self.procs:
            p.send_signal(signal.SIGTERM)
        for p, _ in self.procs:
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
            if p.returncode != 0:
                self.crashed.append(p.returncode)

    def tally(self):
        wrong = reconnects = errors = batches = 0
        examples = []
        for name in sorted(os.listdir(self.logdir)):
            done = 0
            for line in open(os.path.join(self.logdir, name), errors="replace"):
                word = line.split(" ", 1)[0]
                if word == "WRONG":
                    wrong += 1
                    examples.append(f"{name}: {line.strip()}")
                elif word == "RECONNECT":
                    reconnects += 1
                elif word == "ERROR":
                    errors += 1
                    examples.append(f"{name}: {line.strip()}")
                elif word in ("OK", "DONE"):
                    done = max(done, int(line.split()[1]))
            batches += done
        return wrong, reconnects, errors, batches, examples


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--short", action="store_true", help="60 seconds (CI)")
    p.add_argument("--seconds", type=float, default=None, help="run length (default 600, or 60 with --short)")
    p.add_argument("--local", type=int, default=16)
    p.add_argument("--grpc", type=int, default=4)
    p.add_argument("--kills", type=int, default=100)
    p.add_argument("--scale", type=int, default=16)
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--keep", action="store_true", help="keep the scratch directory")
    args = p.parse_args()
    seconds = args.seconds or (60.0 if args.short else 600.0)
    featstore = os.path.join(args.build, "cli", "featstore")
    client = os.path.join(args.build, "tests", "soak_client")
    for exe in (featstore, client):
        if not os.access(exe, os.X_OK):
            sys.exit(f"soak: {exe} is missing: build first (scripts/build.sh)")

    tmp = tempfile.mkdtemp(prefix="featstore-soak-")
    served, pristine, logs = (os.path.join(tmp, d) for d in ("served", "pristine", "logs"))
    os.mkdir(logs)
    subprocess.run([featstore, "gen", "rmat", "--scale", str(args.scale), "--dim", "32", "--out", served],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    shutil.copytree(served, pristine)
    feat = os.path.join(served, "table_feat.npy")
    sock, port = os.path.join(tmp, "s.sock"), free_port()
    listen = f"127.0.0.1:{port}"
    rng = random.Random(1)

    def start_server():
        """A new server, or None when it would not start (tried again later)."""
        try:
            proc, _ = fs_serve.start(featstore, served, sock, ["--threads", "2"], listen=listen,
                                     stderr=open(os.path.join(tmp, "server.log"), "a"))
            return proc
        except RuntimeError as e:
            print(f"soak: the server does not start: {e}", flush=True)
            return None

    server = start_server()
    fds_first = open_fds(server.pid)
    trainers = Trainers(client, pristine, logs)
    for i in range(args.local + args.grpc):
        trainers.spawn("unix://" + sock if i < args.local else "grpc://" + listen)

    t0 = time.monotonic()
    kill_at = [seconds * (0.05 + 0.85 * k / max(1, args.kills)) for k in range(args.kills)]
    events = {"truncate": 0.25 * seconds, "replace": 0.30 * seconds, "restart": 0.50 * seconds}
    crashes, kills, drift, born = 0, 0, [], 0.0
    warm_rss = last_rss = None
    print(f"soak: {seconds:.0f} s, {args.local} unix:// + {args.grpc} grpc:// trainers, {args.kills} kills, "
          f"dataset scale {args.scale} in {tmp}", flush=True)
    while (now := time.monotonic() - t0) < seconds:
        if server is None:  # it died and would not start again: keep trying
            server, born, warm_rss = start_server(), now, None
        elif server.poll() is not None:  # an exit nobody asked for
            crashes += 1
            print(f"soak: the server died (status {server.returncode}) at {now:.1f} s: restarting", flush=True)
            server, born, warm_rss = start_server(), now, None
        while kill_at and kill_at[0] <= now:
            kill_at.pop(0)
            trainers.kill_one(rng)
            kills += 1
        for name, when in list(events.items()):
            if when > now:
                continue
            del events[name]
            if name == "truncate":
                os.truncate(feat, os.path.getsize(feat) // 2)
            elif name == "replace":
                shutil.copyfile(os.path.join(pristine, "table_feat.npy"), feat + ".new")
                os.rename(feat + ".new", feat)
            else:
                if last_rss and warm_rss:
                    drift.append(100.0 * (last_rss - warm_rss) / warm_rss)
                if server is not None and fs_serve.stop(server) != 0:
                    crashes += 1
                server, born, warm_rss = start_server(), now, None
            print(f"soak: {name} at {now:.1f} s", flush=True)
        trainers.reap()
        try:
            last_rss = rss_kb(server.pid)
            if warm_rss is None and now - born >= 0.075 * seconds:  # 15% of a server's half of the run
                warm_rss = last_rss
        except (OSError, AttributeError):  # no server right now
            pass
        time.sleep(0.5)

    if last_rss and warm_rss:
        drift.append(100.0 * (last_rss - warm_rss) / warm_rss)
    trainers.stop()
    time.sleep(2)  # let the server see every hang-up
    fds_end = open_fds(server.pid) if server is not None and server.poll() is None else -1
    if server is None or fs_serve.stop(server) != 0:
        crashes += 1
    wrong, reconnects, errors, batches, examples = trainers.tally()
    for line in examples[:20]:
        print("soak: " + line)
    fd_leak = fds_end - fds_first if fds_end >= 0 else -1
    rss_drift = max(drift) if drift else float("nan")
    print(f"RESULT bench=soak seconds={seconds:.0f} clients_local={args.local} clients_grpc={args.grpc} "
          f"wrong_results={wrong} server_crashes={crashes} client_crashes={len(trainers.crashed)} "
          f"rss_drift_pct={rss_drift:.2f} fd_leak={fd_leak} reconnects={reconnects} kills={kills} "
          f"batches={batches} errors={errors} fds_first={fds_first} fds_end={fds_end}", flush=True)
    if args.keep:
        print(f"soak: kept {tmp}")
    else:
        shutil.rmtree(tmp, ignore_errors=True)
    ok = wrong == 0 and crashes == 0 and not trainers.crashed and fd_leak == 0
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
