#!/usr/bin/python3
"""test_image.py — docker/Dockerfile and docker/compose.yaml built and run
for real (ctest test_image; labels image, slow).

On a Docker engine (tests/package/docker_engine.py: the running one, or Debian's
dockerd started here with its data root in WORK), with a debootstrap base
imported under the Dockerfile's FROM name where the engine has none:

1. the image builds; it is under 120 MB, holds none of apt's caches, its
   featstore.pc says prefix=/usr/local and names files that exist, and it has
   the socket's group featstore with gid 10001;
2. `serve` in it (the socket in a bind-mounted host directory, gRPC and the
   metrics port published on loopback): /healthz answers 200, the host's
   trainer is served over unix:// and grpc:// (counted in /metrics), the
   socket is mode 0660 with gid 10001, a non-root trainer container joining
   gid 10001 is served and one without it is refused (EACCES), and SIGTERM
   ends it with exit 0;
3. the compose stack (featstore and Prometheus) with docker-compose 1.29 and
   with Compose v2 (each half skipped, with the reason, where that version is
   absent): the socket appears at FEATSTORE_RUN_DIR on the host, a trainer is
   served through it, and Prometheus scrapes featstore (up == 1 and a
   featstore metric, bounded wait); then `down -v` leaves no container,
   volume or network of the project.
   Prometheus is Debian's package in an image on the same base
   (tests/package/image/prometheus.Dockerfile, put in by an override file): no
   registry serves prom/prometheus to the test. Grafana is left out: Debian
   has no package of it, and its image needs a registry.

    test_image.py --source DIR --work DIR --trainer PATH

The image is built once for both compose halves; the base tarball and the
engine's images stay in WORK, so a rerun with unchanged sources reuses every
layer. Exits 77 (skipped, reason printed) where no engine can run, or no base
can be made (no debootstrap, no mirror).
"""
import argparse
import json
import os
import re
import shutil
import stat
import sys
import time
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))  # tests/lib: fs_serve
from docker_engine import BUILD_NETWORK, Engine, ensure_base, machine_lock, run, step  # noqa: E402
from fs_serve import Skip, verdict  # noqa: E402

IMAGE = "featstore-test:latest"
PROMETHEUS = "featstore-test/prometheus:latest"
MAX_IMAGE_BYTES = 120_000_000  # docker's MB, as `docker images` shows them
GID = 10001  # the socket's group (docker/Dockerfile FEATSTORE_GID)
V1 = "/usr/bin/docker-compose"  # Debian 12's docker-compose 1.29
GEN = ["gen", "rmat", "--scale", "10", "--dim", "16", "--symmetrize"]  # small: the stack starts in seconds
TRAINER_ARGS = ["--batches", "3", "--batch", "64", "--fanouts", "5,3"]
OFFLINE = ("--network", "none")  # for containers that need none (unix:// goes through the bind mount)
ARGS = None


def dockerfile_base():
    """The one image name both FROM lines of docker/Dockerfile default to."""
    with open(os.path.join(ARGS.source, "docker", "Dockerfile")) as f:
        names = set(re.findall(r"^ARG (?:RUNTIME_)?BASE=(\S+)", f.read(), re.M))
    if len(names) != 1:
        raise AssertionError(f"docker/Dockerfile's BASE and RUNTIME_BASE defaults differ: {names}")
    return names.pop()


def check_context():
    """The work directory (the engine's data root) must stay out of the build
    context: inside the source tree it must be under build*/ (.dockerignore)."""
    rel = os.path.relpath(ARGS.work, ARGS.source)
    if not rel.startswith("..") and not rel.split(os.sep)[0].startswith("build"):
        raise Skip(f"the work directory {ARGS.work} is in the source tree outside build*/: "
                   "the image's build context would take in the engine's data root")


def wait_for(what, probe, timeout):
    """probe() until it returns something true, at most timeout seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = probe()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {timeout} s")
        time.sleep(1)


def http_get(url):
    with urllib.request.urlopen(url, timeout=10) as r:
        return r.status, r.read().decode()


def trainer(uri):
    out = run([ARGS.trainer, uri, *TRAINER_ARGS], timeout=120).stdout
    print(f"  {out.strip().splitlines()[-1]}")


def check_socket(path):
    st = os.stat(path)
    if not stat.S_ISSOCK(st.st_mode) or stat.S_IMODE(st.st_mode) != 0o660 or st.st_gid != GID:
        raise AssertionError(f"{path}: mode {oct(st.st_mode)}, gid {st.st_gid}; want a socket, 0660, gid {GID}")


class Checks:
    def __init__(self, engine):
        self.engine = engine
        self.docker = engine.docker
        self.name = f"featstore-test-{os.getpid()}"

    # ---- 1. the image -------------------------------------------------------------
    def build(self):
        dockerfile = os.path.join(ARGS.source, "docker", "Dockerfile")
        done = self.docker("build", *BUILD_NETWORK, "-f", dockerfile, "-t", IMAGE, ARGS.source, timeout=1800,
                           check=False)
        with open(os.path.join(ARGS.work, "build.log"), "w") as log:
            log.write(done.stdout + done.stderr)
        if done.returncode != 0:
            raise AssertionError(f"docker build exited {done.returncode}:\n{done.stdout[-4000:]}{done.stderr[-2000:]}"
                                 + self.engine.signalled())
        prometheus = os.path.join(ARGS.source, "tests", "package", "image", "prometheus.Dockerfile")
        with open(prometheus) as f:
            self.docker("build", *BUILD_NETWORK, "-t", PROMETHEUS, "-", stdin=f, timeout=900)

    def check_contents(self):
        size = int(self.docker("image", "inspect", "-f", "{{.Size}}", IMAGE).stdout)
        print(f"  image size {size / 1e6:.1f} MB")
        if size >= MAX_IMAGE_BYTES:
            layers = self.docker("history", "--format", "{{.Size}}\t{{.CreatedBy}}", IMAGE).stdout
            raise AssertionError(f"the image is {size} bytes, over {MAX_IMAGE_BYTES}; its layers:\n{layers}")
        script = ("find /var/cache/apt /var/lib/apt/lists -type f -size +0 | sed 's/^/cache /'; "
                  "getent group featstore | sed 's/^/group /'; cat /usr/local/lib/pkgconfig/featstore.pc")
        out = self.docker("run", "--rm", *OFFLINE, "--entrypoint", "sh", IMAGE, "-c", script).stdout
        caches = [line[6:] for line in out.splitlines() if line.startswith("cache ")]
        if caches:
            raise AssertionError(f"apt's caches are in the image: {' '.join(caches[:10])}")
        if f"group featstore:x:{GID}:" not in out:
            raise AssertionError(f"no group featstore with gid {GID} in the image: {out}")
        pc = dict(re.findall(r"^(\w+)=(.*)$", out, re.M))
        if pc.get("prefix") != "/usr/local":
            raise AssertionError(f"featstore.pc: prefix={pc.get('prefix')}, want /usr/local")
        paths = [pc[k].replace("${prefix}", pc["prefix"]) for k in ("libdir", "includedir")]
        wanted = [os.path.join(paths[0], "libfeatstore.so"), os.path.join(paths[1], "featstore", "client.h")]
        self.docker("run", "--rm", *OFFLINE, "--entrypoint", "ls", IMAGE, *wanted)
        print(f"  no apt caches; group featstore:{GID}; featstore.pc prefix=/usr/local, {' '.join(wanted)} there")

    # ---- 2. serve in the image ----------------------------------------------------
    def serve(self, data, run_dir):
        """`serve` detached, its READY line awaited: the host ports of gRPC and metrics."""
        self.docker("run", "-d", "--name", self.name, "--network", self.name,
                    "-p", "127.0.0.1::50051", "-p", "127.0.0.1::9464",
                    "-v", f"{data}:/data:ro", "-v", f"{run_dir}:/run/featstore", IMAGE,
                    "serve", "/data/g", "--socket", "/run/featstore/featstore.sock",
                    "--listen", "0.0.0.0:50051", "--insecure", "--metrics", "0.0.0.0:9464")

        def ready():
            logs = self.docker("logs", self.name)
            if self.docker("inspect", "-f", "{{.State.Running}}", self.name).stdout.strip() != "true":
                raise AssertionError(f"serve exited before READY:\n{logs.stdout}{logs.stderr}")
            return "READY" in logs.stdout
        wait_for("serve's READY line", ready, 90)
        return (self.docker("port", self.name, f"{p}/tcp").stdout.split()[0] for p in (50051, 9464))

    def check_serve(self):
        data, run_dir = os.path.join(ARGS.work, "data"), os.path.join(ARGS.work, "run")
        for d in (data, run_dir):
            shutil.rmtree(d, ignore_errors=True)
            os.makedirs(d)
        self.docker("run", "--rm", *OFFLINE, "-v", f"{data}:/data", IMAGE, *GEN, "--out", "/data/g")
        self.docker("network", "create", self.name)  # its own: the engine may have no default bridge
        try:
            grpc, metrics = self.serve(data, run_dir)
            status, _ = http_get(f"http://{metrics}/healthz")
            if status != 200:
                raise AssertionError(f"/healthz answered {status}")
            sock = os.path.join(run_dir, "featstore.sock")
            check_socket(sock)
            trainer("unix://" + sock)
            trainer("grpc://" + grpc)
            self.check_counted(metrics)
            self.check_group(run_dir)
            self.docker("stop", "-t", "30", self.name)
            code = self.docker("inspect", "-f", "{{.State.ExitCode}}", self.name).stdout.strip()
            if code != "0" or os.path.exists(sock):
                raise AssertionError(f"serve after SIGTERM: exit {code}, socket left: {os.path.exists(sock)}")
        finally:
            self.docker("rm", "-f", self.name, check=False)
            self.docker("network", "rm", self.name, check=False)
            shutil.rmtree(data, ignore_errors=True)
            shutil.rmtree(run_dir, ignore_errors=True)
        print("  /healthz 200; host trainer served over unix:// and grpc://; socket 0660 gid "
              f"{GID}; non-root container served with --group-add {GID}, refused without; SIGTERM -> exit 0")

    @staticmethod
    def check_counted(metrics):
        """The trainers' 3 SampleGather calls per transport, in this server's /metrics."""
        _, text = http_get(f"http://{metrics}/metrics")
        for transport in ("unix", "grpc"):
            line = f'featstore_requests_total{{method="SampleGather",transport="{transport}"}} 3'
            if line not in text.splitlines():
                raise AssertionError(f"/metrics lacks `{line}`:\n{text[:3000]}")

    def check_group(self, run_dir):
        """A non-root trainer container: served with the socket's gid added, refused without."""
        base = ["run", "--rm", *OFFLINE, "--user", "65534:65534", "-v", f"{run_dir}:/run/featstore",
                "--entrypoint", "featstore-trainer"]
        uri = ["unix:///run/featstore/featstore.sock", *TRAINER_ARGS]
        self.docker(*base, "--group-add", str(GID), IMAGE, *uri, timeout=120)
        done = self.docker(*base, IMAGE, *uri, timeout=120, check=False)
        if done.returncode == 0 or "Permission denied" not in done.stderr:
            raise AssertionError(f"uid 65534 outside gid {GID} was not refused (exit {done.returncode}): "
                                 f"{done.stderr}")

    # ---- 3. the compose stack -------------------------------------------------------
    def compose_halves(self):
        """The stack with each Compose version present; skipped halves named."""
        skipped = []
        for label, find in (("docker-compose 1.29", compose_v1), ("Compose v2", compose_v2)):
            try:
                cmd = find(self.engine)
            except Skip as e:
                print(f"  {label}: skipped: {e}")
                skipped.append(label)
                continue
            step(f"compose stack with {label} ({' '.join(cmd)})", Stack(self.engine, cmd, label).check)
        return skipped


def compose_version(engine, cmd):
    done = run(cmd + ["version", "--short"], env=engine.env(), check=False, timeout=60)
    return done.stdout.strip() if done.returncode == 0 else None


def compose_v1(engine):
    version = compose_version(engine, [V1]) if os.path.exists(V1) else None
    if not version or not version.startswith("1."):
        raise Skip(f"no docker-compose 1.x at {V1} (Debian 12: apt-get install docker-compose); found {version}")
    return [V1]


def compose_v2(engine):
    """`docker compose` (Docker's compose plugin), or the binary named by
    FEATSTORE_TEST_COMPOSE_V2 (a v2 docker-compose run standalone)."""
    explicit = os.environ.get("FEATSTORE_TEST_COMPOSE_V2")
    cmd = [explicit] if explicit else ["/usr/bin/docker", "compose"]
    version = compose_version(engine, cmd)
    if not version or not re.match(r"v?[2-9]\.", version):
        raise Skip(f"`{' '.join(cmd)}` is not Compose v2 (found {version}): Debian 12's docker.io has no compose "
                   "plugin; Docker's docker-compose-plugin provides it, or set FEATSTORE_TEST_COMPOSE_V2")
    return cmd


class Stack:
    """docker/compose.yaml up with one Compose, checked, and taken down."""

    def __init__(self, engine, cmd, label):
        self.engine = engine
        tag = "v1" if cmd == [V1] else "v2"
        self.project = f"fstest{os.getpid()}{tag}"
        self.run_dir = os.path.join(ARGS.work, f"run-compose-{tag}")
        override = os.path.join(ARGS.work, "compose.override.yaml")
        with open(override, "w") as f:  # JSON is YAML
            json.dump({"services": {"prometheus": {"image": PROMETHEUS},
                                    "featstore": {"environment": {"FEATSTORE_GEN_ARGS": " ".join(GEN[2:])}}}}, f)
        self.cmd = cmd + ["-p", self.project, "-f", os.path.join(ARGS.source, "docker", "compose.yaml"),
                          "-f", override]
        self.env = engine.env(FEATSTORE_IMAGE=IMAGE, FEATSTORE_RUN_DIR=self.run_dir, FEATSTORE_PROMETHEUS_PORT="")

    def compose(self, *args, timeout=300):
        return run(self.cmd + list(args), env=self.env, timeout=timeout)

    def check(self):
        self.check_default_socket_dir()
        shutil.rmtree(self.run_dir, ignore_errors=True)
        try:
            self.compose("up", "-d", "--no-build", "featstore", "prometheus")
            sock = os.path.join(self.run_dir, "featstore.sock")
            wait_for(f"the socket at {sock}", lambda: os.path.exists(sock) or self.check_running(), 180)
            check_socket(sock)
            trainer("unix://" + sock)
            self.check_scraped()
        except BaseException:
            self.down(check=False)  # the first failure is the one to report
            raise
        self.down()

    def down(self, check=True):
        run(self.cmd + ["down", "--volumes", "--remove-orphans", "--timeout", "30"], env=self.env, timeout=300,
            check=check)
        if check:
            self.check_removed()
        shutil.rmtree(self.run_dir, ignore_errors=True)

    def check_default_socket_dir(self):
        """Without FEATSTORE_RUN_DIR the socket's directory is the host's
        /run/featstore (docs/docker.md), as each Compose resolves the file."""
        env = dict(self.env)
        del env["FEATSTORE_RUN_DIR"]
        out = run(self.cmd + ["config"], env=env).stdout
        if not re.search(r"- /run/featstore:/run/featstore\b|source: /run/featstore\s+target: /run/featstore\s", out):
            raise AssertionError(f"compose config binds no host /run/featstore on /run/featstore:\n{out}")

    def check_running(self):
        """False while featstore runs (a probe's "not yet"); its logs if it stopped."""
        ps = self.compose("ps", "-q", "featstore").stdout.split()
        state = self.engine.docker("inspect", "-f", "{{.State.Running}}", *ps, check=False).stdout.strip()
        if state != "true":
            raise AssertionError(f"featstore is not running ({state!r}):\n{self.compose('logs', 'featstore').stdout}")
        return False

    def query(self, port, promql):
        status, body = http_get(f"http://{port}/api/v1/query?" + urllib.parse.urlencode({"query": promql}))
        return json.loads(body)["data"]["result"]

    def check_scraped(self):
        port = self.compose("port", "prometheus", "9090").stdout.strip()

        def up():
            try:
                return any(r["value"][1] == "1" for r in self.query(port, 'up{job="featstore"}'))
            except OSError:  # Prometheus not listening yet
                return False
        wait_for(f"Prometheus at {port}: up{{job=\"featstore\"}} == 1", up, 120)
        series = self.query(port, "featstore_requests_total")
        if not series:
            raise AssertionError("Prometheus has no featstore_requests_total after a successful scrape")
        print(f"  Prometheus (Debian's) scrapes featstore: up == 1, {len(series)} featstore_requests_total series")

    def check_removed(self):
        label = f"label=com.docker.compose.project={self.project}"
        left = {what: self.engine.docker(*cmd, "-q", "--filter", label).stdout.split()
                for what, cmd in (("containers", ("ps", "-a")), ("volumes", ("volume", "ls")),
                                  ("networks", ("network", "ls")))}
        if any(left.values()):
            raise AssertionError(f"`down -v` left {left}")


def check_all():
    """Every check in turn, on an engine held for this run alone."""
    t0 = time.monotonic()
    check_context()
    os.makedirs(ARGS.work, exist_ok=True)
    with machine_lock():
        engine = Engine(ARGS.work)
        try:
            step("engine", engine.start)
            base = dockerfile_base()
            print(f"  base {base}: {ensure_base(engine, ARGS.work, base)}")
            checks = Checks(engine)
            step("docker build (the image and Debian's Prometheus)", checks.build)
            step("image contents", checks.check_contents)
            step("serve in the image", checks.check_serve)
            skipped = checks.compose_halves()
        finally:
            engine.stop()
    return f"in {time.monotonic() - t0:.1f} s" + (f" (skipped: {', '.join(skipped)})" if skipped else "")


def main():
    global ARGS
    ap = argparse.ArgumentParser()
    ap.add_argument("--source", required=True, help="the repository (the build context)")
    ap.add_argument("--work", required=True, help="scratch: the base tarball, the engine's data root, logs")
    ap.add_argument("--trainer", required=True, help="the host build's featstore-trainer")
    ARGS = ap.parse_args()
    ARGS.source, ARGS.work = os.path.abspath(ARGS.source), os.path.abspath(ARGS.work)
    verdict("test_image", check_all)


if __name__ == "__main__":
    main()
