"""docker_engine.py — a Docker engine for tests/package/test_image.py, and the Debian
base image it builds on without a registry.

Engine: the running dockerd where one answers (DOCKER_HOST, else
/var/run/docker.sock), left running; otherwise Debian's dockerd started here
(no systemd to start it) with its data root under the test's work directory,
so images stay cached between runs, and its sockets in a short temporary
directory (unix socket paths are limited to 108 bytes). One such run at a time
on a machine: two engines would give their networks the same subnets.

Base: `debootstrap --variant=minbase bookworm` from the mirror apt uses, made
slim as Debian's debian:bookworm-slim is (no documentation, man pages or
locales, and dpkg told to leave them out of later installs) but without its
docker-clean apt config, so a Dockerfile that leaves apt's caches behind shows
in the image's size. The tarball is cached in the work directory; it is
imported under the Dockerfile's FROM name only where that name is missing.

Everything this machine cannot do (root, tools, a mirror) raises Skip.
"""
import contextlib
import fcntl
import functools
import glob
import os
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.request

from fs_serve import Skip, die_with_parent

DOCKER = "/usr/bin/docker"  # Debian's docker.io CLI (a newer one elsewhere on PATH is not the one meant)
DOCKERD = ("/usr/sbin/dockerd", "/usr/bin/dockerd")  # docker.io's, Docker's own packages'
LOCK = "/tmp/featstore-test-image.lock"
# The engine started here leaves the host's firewall, forwarding and links as
# they were: no iptables rules (and no FORWARD policy DROP), no docker0
# bridge. Its containers then reach no network but those the test creates
# (published ports on loopback still work, through docker-proxy), so builds
# run on the host's network (BUILD_NETWORK).
HOST_UNTOUCHED = ("--iptables=false", "--ip-forward=false", "--bridge=none")
BUILD_NETWORK = ("--network", "host")
SLIM_EXCLUDES = ("/usr/share/doc/*", "/usr/share/man/*", "/usr/share/info/*", "/usr/share/locale/*")


def run(cmd, timeout=600, env=None, check=True, stdin=None):
    """cmd with text output captured; RuntimeError with the output on failure."""
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env, stdin=stdin)
    if check and done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {done.returncode}:\n{done.stdout[-3000:]}{done.stderr[-3000:]}")
    return done


def step(name, fn, *args):
    """fn(*args), its time printed under name."""
    t0 = time.monotonic()
    result = fn(*args)
    print(f"[{time.monotonic() - t0:6.1f} s] {name}", flush=True)
    return result


@contextlib.contextmanager
def machine_lock(wait_s=600):
    """One engine test per machine; waits at most wait_s for another to end."""
    fd = os.open(LOCK, os.O_RDWR | os.O_CREAT, 0o666)
    with contextlib.suppress(PermissionError):  # not ours: its owner made it so already
        os.fchmod(fd, 0o666)  # a later run may be another user's (one in the docker group)
    with os.fdopen(fd) as f:
        deadline = time.monotonic() + wait_s
        while True:
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise Skip(f"another run held {LOCK} for over {wait_s} s")
                time.sleep(2)
        yield


class Engine:
    """A dockerd to talk to: docker(args) runs the Debian CLI against it."""

    def __init__(self, work):
        self.work = work
        self.proc = None
        self.tmp = None
        self.host = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")

    def env(self, **extra):
        return dict(os.environ, DOCKER_HOST=self.host, **extra)

    def docker(self, *args, timeout=600, check=True, stdin=None):
        try:
            return run([DOCKER, *args], timeout=timeout, env=self.env(), check=check, stdin=stdin)
        except RuntimeError as e:
            raise RuntimeError(f"{e}{self.signalled()}") from None

    def signalled(self):
        """A note when the dockerd started here was stopped by someone else
        (a failure then says so rather than blame the image)."""
        log = os.path.join(self.work, "dockerd.log")
        if self.proc is None or not os.path.exists(log):
            return ""
        with open(log) as f:
            told = "Processing signal" in f.read()
        return f"\n(dockerd {self.proc.pid} was signalled from outside this test; {log})" if told else ""

    def answers(self):
        try:
            return self.docker("version", "--format", "{{.Server.Version}}", timeout=20, check=False).returncode == 0
        except subprocess.TimeoutExpired:
            return False

    def start(self):
        """Uses a running engine, or starts Debian's dockerd (root only)."""
        if not os.path.exists(DOCKER):
            raise Skip(f"no {DOCKER} (Debian: apt-get install docker.io)")
        if self.answers():
            print(f"engine: using the running dockerd at {self.host} (left running)")
            return
        dockerd = next((d for d in DOCKERD if os.path.exists(d)), None)
        if dockerd is None:
            raise Skip(f"no dockerd answers at {self.host} and none is installed (Debian: docker.io)")
        if os.geteuid() != 0:
            raise Skip(f"no dockerd answers at {self.host} and starting one needs root")
        self.launch(dockerd)

    def launch(self, dockerd):
        self.tmp = tempfile.mkdtemp(prefix="fs-dockerd-")
        self.host = f"unix://{self.tmp}/docker.sock"
        log_path = os.path.join(self.work, "dockerd.log")
        with open(log_path, "w") as log:
            self.proc = subprocess.Popen(
                [dockerd, "--data-root", os.path.join(self.work, "docker-data"), "--exec-root",
                 os.path.join(self.tmp, "exec"), "--pidfile", os.path.join(self.tmp, "dockerd.pid"), "-H", self.host,
                 *HOST_UNTOUCHED],
                stdout=log, stderr=subprocess.STDOUT,
                # SIGTERM if the test dies: dockerd then stops its containers
                preexec_fn=functools.partial(die_with_parent, signal.SIGTERM))
        deadline = time.monotonic() + 60
        while not self.answers():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                status = self.proc.returncode
                self.stop()
                with open(log_path) as f:
                    raise Skip(f"dockerd did not start (exit {status}); its log ends:\n{f.read()[-1500:]}")
            time.sleep(0.5)
        driver = self.docker("info", "--format", "{{.Driver}}").stdout.strip()
        print(f"engine: started {dockerd} (storage driver {driver}, data root {self.work}/docker-data)")

    def stop(self):
        """Stops the dockerd this test started (its containers stop with it)."""
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        unmount_under(self.tmp)
        shutil.rmtree(self.tmp, ignore_errors=True)
        self.proc = None

    def has_image(self, name):
        return self.docker("image", "inspect", name, check=False).returncode == 0


def unmount_under(top):
    """What dockerd leaves mounted below its exec root (the host's network
    namespace, bound at exec/netns/default), deepest first."""
    with open("/proc/self/mounts") as f:
        points = [line.split()[1] for line in f]
    for point in sorted((p for p in points if p.startswith(top + "/")), key=len, reverse=True):
        run(["umount", point], check=False)


def apt_mirror():
    """The first Debian mirror apt fetches bookworm's main from (one-line
    sources.list entries or deb822 .sources), for debootstrap."""
    found = []
    for path in ["/etc/apt/sources.list"] + sorted(glob.glob("/etc/apt/sources.list.d/*.list")):
        with contextlib.suppress(OSError), open(path) as f:
            for line in f:
                words = [w for w in line.split() if not w.startswith("[")]  # [options] dropped
                if len(words) >= 4 and words[0] == "deb" and words[2] == "bookworm" and "main" in words[3:]:
                    found.append(words[1])
    for path in sorted(glob.glob("/etc/apt/sources.list.d/*.sources")):
        with contextlib.suppress(OSError), open(path) as f:
            for stanza in f.read().split("\n\n"):
                fields = dict(line.split(":", 1) for line in stanza.splitlines() if ":" in line and line[0] != "#")
                fields = {k.strip(): v.split() for k, v in fields.items()}
                if "bookworm" in fields.get("Suites", []) and "main" in fields.get("Components", []):
                    found += fields.get("URIs", [])
    if not found:
        raise Skip("apt lists no Debian 12 (bookworm) main mirror for debootstrap")
    mirror = found[0].rstrip("/")
    try:
        urllib.request.urlopen(f"{mirror}/dists/bookworm/Release", timeout=15).close()
    except OSError as e:
        raise Skip(f"the mirror {mirror} is not reachable: {e}")
    return mirror


def slim_root(root):
    """What Debian's slim images leave out, removed, and left out of later
    installs; apt's downloaded .debs and lists removed (their docker-clean
    config is not added: the image must clean up after itself)."""
    for pattern in SLIM_EXCLUDES + ("/var/cache/apt/archives/*.deb", "/var/lib/apt/lists/*"):
        for path in glob.glob(root + pattern.replace("/doc/*", "/doc/*/*")):  # each package's copyright stays
            if path.endswith("/copyright"):
                continue
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path)
            else:  # gone already where a package's doc directory links to another's
                with contextlib.suppress(FileNotFoundError):
                    os.remove(path)
    with open(os.path.join(root, "etc", "dpkg", "dpkg.cfg.d", "slim"), "w") as f:
        f.write("".join(f"path-exclude {p}\n" for p in SLIM_EXCLUDES) + "path-include /usr/share/doc/*/copyright\n")


def base_tarball(work):
    """WORK/base-bookworm.tar: the slim minbase root, made once."""
    tar = os.path.join(work, "base-bookworm.tar")
    if os.path.exists(tar):
        return tar
    if not shutil.which("debootstrap"):
        raise Skip("no debootstrap (Debian: apt-get install debootstrap)")
    mirror = apt_mirror()
    root = os.path.join(work, "base-root")
    shutil.rmtree(root, ignore_errors=True)
    done = run(["debootstrap", "--variant=minbase", "bookworm", root, mirror], check=False, timeout=900)
    if done.returncode != 0:
        shutil.rmtree(root, ignore_errors=True)
        raise Skip(f"debootstrap from {mirror} failed (exit {done.returncode}): "
                   f"{done.stdout[-800:]}{done.stderr[-800:]}")
    slim_root(root)
    run(["tar", "-C", root, "-cf", tar + ".tmp", "."])
    os.rename(tar + ".tmp", tar)
    shutil.rmtree(root, ignore_errors=True)
    return tar


def ensure_base(engine, work, name):
    """The image `name` (the Dockerfile's FROM): the engine's own where it has
    one (a pulled debian:bookworm-slim, or the one imported on an earlier
    run: a re-import would change its id and void every cached layer), else
    the debootstrap tarball imported under that name."""
    if engine.has_image(name):
        return "cached"
    tar = step("debootstrap base (cached after the first run)", base_tarball, work)
    engine.docker("import", tar, name)
    return "imported"
