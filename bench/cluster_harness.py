"""cluster_harness.py — what bench_cluster.py and its DistDGL peer
(peers/distdgl_cluster.py) share to run "machines" on one host: the
network of cluster_net.sh (namespaces fsbench<i>, tbf-capped links, their
wire bytes), a process started on a machine in a process group of its own,
its "FSB ..." lines read without blocking, and bounded waits for them.

Every wait has a timeout, and a process that dies first fails the wait
naming its log; kill_group ends a machine's process and its children.
"""
import os
import select
import signal
import subprocess
import sys
import time

NET = os.path.join(os.path.dirname(os.path.abspath(__file__)), "cluster_net.sh")


def log(*a):
    print(os.path.basename(sys.argv[0]) + ":", *a, file=sys.stderr, flush=True)


def net(*a, timeout=60):
    r = subprocess.run([NET, *a], capture_output=True, text=True, timeout=timeout)
    if r.returncode != 0:
        raise RuntimeError("cluster_net.sh %s: %s" % (" ".join(a), r.stderr.strip()))
    return r.stdout


def wire_bytes():
    out = net("bytes")
    return int(out.strip().split("=")[1])


CPU_CGROUPS = "/sys/fs/cgroup/cpu"  # cgroup v1's cpu controller (this kernel's)


def cpu_cgroup(i):
    return os.path.join(CPU_CGROUPS, "fsbench%d" % i)


def cpus_up(n, cores):
    """Machine i's processes may use `cores` cores at most (a cfs quota), so
    that n machines on one host each have cores of their own, as a cluster
    of equal machines has; cores <= 0: no cap."""
    cpus_down()
    for i in range(n if cores > 0 else 0):
        os.makedirs(cpu_cgroup(i), exist_ok=True)
        with open(os.path.join(cpu_cgroup(i), "cpu.cfs_period_us"), "w") as f:
            f.write("100000")
        with open(os.path.join(cpu_cgroup(i), "cpu.cfs_quota_us"), "w") as f:
            f.write(str(int(cores * 100000)))


def cpus_down():
    """Removes the machines' cgroups (their processes gone: a cgroup with one is kept)."""
    if not os.path.isdir(CPU_CGROUPS):
        return
    for name in os.listdir(CPU_CGROUPS):
        if name.startswith("fsbench"):
            try:
                os.rmdir(os.path.join(CPU_CGROUPS, name))
            except OSError:
                pass


def on_machine(i, shm, env, argv):
    """argv run in namespace fsbench<i> (with /dev/shm bound to `shm`
    unless None, and in machine i's cpu cgroup when cpus_up made one), in a
    process group of its own."""
    cmd = ["ip", "netns", "exec", "fsbench%d" % i, *argv] if shm is None else [
        "ip", "netns", "exec", "fsbench%d" % i, "sh", "-c", 'mount --bind "$0" /dev/shm && exec "$@"', shm, *argv]
    if os.path.isdir(cpu_cgroup(i)):  # the process joins it before it execs, so its children are in it too
        cmd = ["sh", "-c", 'echo $$ > "$0"/cgroup.procs && exec "$@"', cpu_cgroup(i), *cmd]
    full = dict(os.environ, **env)
    return subprocess.Popen(cmd, env=full, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, bufsize=1, start_new_session=True)


def wait_port(i, host, port, timeout, watch=None):
    """Until host:port accepts a connection from machine i (bounded); a
    watched process that exits first fails the wait."""
    end = time.time() + timeout
    probe = ["ip", "netns", "exec", "fsbench%d" % i, sys.executable, "-c",
             "import socket, sys; socket.create_connection((sys.argv[1], int(sys.argv[2])), 1)", host, str(port)]
    while subprocess.run(probe, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=10).returncode != 0:
        if watch is not None and watch.p.poll() is not None:
            raise RuntimeError("%s exited (rc %s) before %s:%d answered; see its log %s"
                               % (watch.name, watch.p.returncode, host, port, watch.logf.name))
        if time.time() > end:
            raise TimeoutError("%s:%d did not answer within %d s" % (host, port, timeout))
        time.sleep(0.2)


class Proc:
    def __init__(self, name, popen, logf):
        self.name, self.p, self.logf, self.buf = name, popen, logf, ""
        self.lines = []                           # lines seen, "FSB " taken off

    def pump(self):
        """Read what is there without blocking; keep and log every line."""
        fd = self.p.stdout.fileno()
        while select.select([fd], [], [], 0)[0]:
            data = os.read(fd, 65536).decode(errors="replace")
            if not data:
                return False
            self.logf.write(data)
            self.logf.flush()
            self.buf += data
            while "\n" in self.buf:
                line, self.buf = self.buf.split("\n", 1)
                self.lines.append(line[4:] if line.startswith("FSB ") else line)
        return True

    def send(self, s):
        self.p.stdin.write(s + "\n")
        self.p.stdin.flush()


def wait_for(procs, word, timeout, watch=()):
    """Until every proc in procs has a line starting with `word`; fails on a death or the timeout."""
    end = time.time() + timeout
    while True:
        for p in list(procs) + list(watch):
            p.pump()
            if p.p.poll() is not None and not any(l.startswith(word) for l in p.lines):
                p.pump()
                raise RuntimeError("%s exited (rc %s) before %s; see its log %s"
                                   % (p.name, p.p.returncode, word, p.logf.name))
        if all(any(l.startswith(word) for l in p.lines) for p in procs):
            return [next(l for l in p.lines if l.startswith(word)) for p in procs]
        if time.time() > end:
            raise TimeoutError("no %s from %s within %d s" % (
                word, [p.name for p in procs if not any(l.startswith(word) for l in p.lines)], timeout))
        time.sleep(0.2)


def kill_group(p, grace=5.0):
    if p.poll() is not None:
        return
    try:
        os.killpg(p.pid, signal.SIGTERM)
        p.wait(grace)
    except (subprocess.TimeoutExpired, ProcessLookupError):
        try:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait(5)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            pass


def teardown(procs):
    """Every process killed (its group) and its log closed, then the
    network and the cpu cgroups removed: what a driver's finally does."""
    for p in procs:
        kill_group(p.p)
        try:
            p.pump()
        except (OSError, ValueError):
            pass
        p.logf.close()
    try:
        net("down")
    except Exception as e:  # noqa: BLE001 - cleanup goes on
        log("cluster_net.sh down failed:", e)
    cpus_down()


def parse_kv(line):
    return dict(kv.split("=", 1) for kv in line.split()[1:] if "=" in kv)
