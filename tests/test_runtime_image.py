#!/usr/bin/python3
"""test_runtime_image.py — the Docker runtime stage (docker/Dockerfile) checked
without Docker (ctest test_runtime_image; labels package, slow).

The build is installed into a prefix and scripts/runtime-packages.sh lists the
packages it needs, as the image's build stage does. Those packages, libc6 and
libc-bin (the loader, and ldconfig as the image runs it), with their Depends
closure (apt-cache depends --recurse, no Recommends), are fetched with
apt-get download and unpacked with dpkg-deb -x into an empty root, the
install is copied to <root>/usr/local, and in a chroot the installed binary
must run `featstore version` and `featstore serve` on a copy of Cora (READY,
/healthz answering 200, trainers served over unix:// and grpc://,
SIGTERM -> exit 0). Then the same root without
libjemalloc2 must fail to start, naming the library: the check sees a
missing package.

    test_runtime_image.py --build DIR --source DIR --cmake CMAKE --work DIR [--drop PKG]

--drop removes a package from the listed ones first (to see the test fail).
Exits 77 (skipped, reason printed) when not root, without chroot/apt, or when
the packages cannot be fetched. The .debs are kept in WORK/debs: a rerun
downloads only what changed. Debian 12 (the runtime stage's release) only.
"""
import argparse
import glob
import os
import shutil
import stat
import subprocess
import sys
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fs_serve  # noqa: E402

SKIP = 77
ESSENTIAL = ["libc6", "libc-bin"]  # the dynamic loader; ldconfig, as the Dockerfile runs it
NEGATIVE = ("libjemalloc2", "libjemalloc.so.2")  # a package the binary links, and its library's name
DEV_NODES = {"null": 3, "zero": 5, "full": 7, "random": 8, "urandom": 9}  # major 1 (mem), by minor
ARGS = None


class Skip(Exception):
    """A reason this machine cannot run the check (not a failure of it)."""


def run(cmd, **kw):
    """subprocess.run with text output captured; raises with the output on failure."""
    done = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {done.returncode}:\n{done.stdout}{done.stderr}")
    return done.stdout


def preconditions():
    if os.geteuid() != 0:
        raise Skip("not root: chroot needs it")
    for tool in ("chroot", "apt-get", "apt-cache", "dpkg-deb", "ldd"):
        if not shutil.which(tool):
            raise Skip(f"no {tool} on PATH")
    try:
        with open("/etc/os-release") as f:
            release = dict(line.rstrip("\n").split("=", 1) for line in f if "=" in line)
    except OSError:
        release = {}
    if release.get("VERSION_CODENAME") != "bookworm":
        raise Skip(f"not Debian 12 (bookworm), the runtime stage's release: {release.get('PRETTY_NAME', '?')}")
    if subprocess.run(["chroot", "/", "true"], capture_output=True).returncode != 0:
        raise Skip("chroot is not permitted here (no CAP_SYS_CHROOT?)")


def install(prefix):
    shutil.rmtree(prefix, ignore_errors=True)
    run([ARGS.cmake, "--install", ARGS.build, "--prefix", prefix])


def runtime_packages(prefix):
    out = run(["bash", os.path.join(ARGS.source, "scripts", "runtime-packages.sh"), prefix])
    pkgs = out.split()
    if not pkgs:
        raise AssertionError("runtime-packages.sh listed nothing")
    return pkgs


def closure(pkgs):
    """The packages with their recursive Depends and Pre-Depends (virtual
    names, shown as <name>, are left out: a real provider is listed too)."""
    done = subprocess.run(["apt-cache", "depends", "--recurse", "--no-recommends", "--no-suggests", "--no-conflicts",
                           "--no-breaks", "--no-replaces", "--no-enhances"] + pkgs, capture_output=True, text=True)
    if done.returncode != 0:
        raise Skip(f"apt-cache depends failed (no package lists? run apt-get update): {done.stderr.strip()}")
    names = {line.strip() for line in done.stdout.splitlines() if line and not line[0].isspace()}
    return sorted(n for n in names if not n.startswith("<"))


def cached_deb(debs, pkg):
    found = glob.glob(os.path.join(debs, f"{pkg}_*.deb"))
    return found[0] if found else None


def download(pkgs, debs):
    """The .deb of each package, fetched into debs unless already there."""
    os.makedirs(debs, exist_ok=True)
    missing = [p for p in pkgs if not cached_deb(debs, p)]
    if missing:
        print(f"test_runtime_image: downloading {len(missing)} packages into {debs}", flush=True)
        done = subprocess.run(["apt-get", "download", "-q"] + missing, cwd=debs, capture_output=True, text=True)
        if done.returncode != 0:
            raise Skip(f"apt-get download failed (no network or mirror?): {done.stderr.strip()[-500:]}")
    return {p: cached_deb(debs, p) for p in pkgs}


def make_dev(root):
    """The device nodes a container runtime gives every container (serve
    opens /dev/null to keep a descriptor in reserve)."""
    os.makedirs(os.path.join(root, "dev"), exist_ok=True)
    for name, minor in DEV_NODES.items():
        path = os.path.join(root, "dev", name)
        try:
            os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(1, minor))
        except PermissionError as e:
            raise Skip(f"cannot make device nodes in the root (mknod {path}: {e.strerror})")
        os.chmod(path, 0o666)


def make_root(root, debs, prefix):
    """An empty root with the packages unpacked and the install in /usr/local."""
    shutil.rmtree(root, ignore_errors=True)
    os.makedirs(root)
    for deb in debs:
        run(["dpkg-deb", "-x", deb, root])
    shutil.copytree(prefix, os.path.join(root, "usr", "local"), symlinks=True, dirs_exist_ok=True)
    os.makedirs(os.path.join(root, "tmp"), exist_ok=True)
    os.chmod(os.path.join(root, "tmp"), 0o1777)
    make_dev(root)
    run(["chroot", root, "/sbin/ldconfig"])  # as the Dockerfile's RUN ldconfig: /usr/local/lib


def chroot(root, *args):
    return subprocess.run(["chroot", root, "/usr/local/bin/featstore"] + list(args), capture_output=True, text=True,
                          timeout=60)


def check_version(root):
    done = chroot(root, "version")
    if done.returncode != 0:
        raise AssertionError(f"featstore version in the runtime root exited {done.returncode}:\n{done.stderr}")
    print(f"test_runtime_image: featstore version in the root: {done.stdout.strip()}")


def check_serve(root):
    """`featstore serve` in the root on Cora: READY, /healthz 200 from
    outside (the chroot shares the network), a trainer from outside served
    over unix:// (the socket in the root) and grpc://, SIGTERM -> exit 0."""
    os.makedirs(os.path.join(root, "data"), exist_ok=True)
    fs_serve.import_cora(os.path.join(ARGS.build, "cli", "featstore"), os.path.join(root, "data", "cora"))
    proc = subprocess.Popen(["chroot", root, "/usr/local/bin/featstore", "serve", "/data/cora", "--socket",
                             "/tmp/featstore.sock", "--listen", "127.0.0.1:0", "--metrics", "127.0.0.1:0"],
                            stdout=subprocess.PIPE, preexec_fn=fs_serve.die_with_parent)
    try:
        ready = fs_serve.read_ready(proc)
        with urllib.request.urlopen(f"http://127.0.0.1:{ready['metrics']}/healthz", timeout=10) as r:
            if r.status != 200:
                raise AssertionError(f"/healthz answered {r.status}")
        trainer = os.path.join(ARGS.build, "examples", "featstore-trainer")
        for uri in ("unix://" + os.path.join(root, "tmp", "featstore.sock"), "grpc://" + ready["grpc"]):
            run([trainer, uri, "--batches", "3", "--batch", "64", "--fanouts", "5,3"], timeout=60)
    finally:
        status = fs_serve.stop(proc)
    if status != 0:
        raise AssertionError(f"featstore serve in the root exited {status} on SIGTERM")
    print(f"test_runtime_image: featstore serve in the root: READY {ready}, /healthz 200, trainers served over "
          "unix:// and grpc://, exit 0")


def check_negative(pkgs, work, prefix):
    """Without NEGATIVE's package the root must not start the binary, and say
    which library is missing: a list short of a library fails this test."""
    pkg, lib = NEGATIVE
    if pkg not in pkgs:
        raise AssertionError(f"{pkg} is not listed: the binary no longer links {lib}? (update NEGATIVE)")
    names = closure([p for p in pkgs if p != pkg] + ESSENTIAL)
    if pkg in names:
        raise AssertionError(f"{pkg} comes in through another package's Depends: pick another NEGATIVE")
    root = os.path.join(work, "root-without")
    make_root(root, download(names, os.path.join(work, "debs")).values(), prefix)
    done = chroot(root, "version")
    if done.returncode == 0 or lib not in done.stderr:
        raise AssertionError(f"without {pkg} featstore still ran (exit {done.returncode}): {done.stderr}")
    print(f"test_runtime_image: without {pkg}: {done.stderr.strip()}")
    shutil.rmtree(root, ignore_errors=True)


def main():
    global ARGS
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--source", required=True)
    ap.add_argument("--cmake", default="cmake")
    ap.add_argument("--work", required=True, help="scratch directory; WORK/debs caches the packages")
    ap.add_argument("--drop", action="append", default=[], help="leave this package out of the list (to see a failure)")
    ARGS = ap.parse_args()
    work = os.path.abspath(ARGS.work)
    try:
        preconditions()
        os.makedirs(work, exist_ok=True)
        prefix = os.path.join(work, "prefix")
        install(prefix)
        pkgs = [p for p in runtime_packages(prefix) if p not in ARGS.drop]
        print(f"test_runtime_image: runtime-packages.sh: {' '.join(pkgs)}", flush=True)
        names = closure(pkgs + ESSENTIAL)
        debs = download(names, os.path.join(work, "debs"))
        root = os.path.join(work, "root")
        make_root(root, debs.values(), prefix)
        print(f"test_runtime_image: root of {len(names)} packages (with their Depends)", flush=True)
        check_version(root)
        check_serve(root)
        if not ARGS.drop:
            check_negative(pkgs, work, prefix)
        shutil.rmtree(root, ignore_errors=True)
    except Skip as e:
        print(f"test_runtime_image: skipped: {e}")
        sys.exit(SKIP)
    except (AssertionError, RuntimeError) as e:
        print(f"test_runtime_image: FAILED: {e}")
        sys.exit(1)
    print("test_runtime_image: ok")


if __name__ == "__main__":
    main()
