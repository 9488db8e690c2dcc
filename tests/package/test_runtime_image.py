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
import os
import shutil
import sys
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))  # tests/lib: fs_serve
import bare_root  # noqa: E402
from bare_root import ESSENTIAL, closure, run  # noqa: E402
import fs_serve  # noqa: E402

NEGATIVE = ("libjemalloc2", "libjemalloc.so.2")  # a package the binary links, and its library's name
ARGS = None


def preconditions():
    bare_root.preconditions("the runtime stage's release")


def download(pkgs, debs):
    return bare_root.download(pkgs, debs, "test_runtime_image")


def install(prefix):
    shutil.rmtree(prefix, ignore_errors=True)
    run([ARGS.cmake, "--install", ARGS.build, "--prefix", prefix])


def runtime_packages(prefix):
    out = run(["bash", os.path.join(ARGS.source, "scripts", "runtime-packages.sh"), prefix])
    pkgs = out.split()
    if not pkgs:
        raise AssertionError("runtime-packages.sh listed nothing")
    return pkgs


def make_root(root, debs, prefix):
    """An empty root with the packages unpacked and the install in /usr/local."""
    bare_root.make_root(root, debs)
    shutil.copytree(prefix, os.path.join(root, "usr", "local"), symlinks=True, dirs_exist_ok=True)
    bare_root.ldconfig(root)  # as the Dockerfile's RUN ldconfig: /usr/local/lib


def chroot(root, *args):
    return bare_root.chroot(root, "/usr/local/bin/featstore", *args)


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
    proc, ready = bare_root.serve(root, "/usr/local/bin/featstore", "/data/cora")
    try:
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


def check_all(work):
    """Every check in turn (fs_serve.verdict ends the test)."""
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


def main():
    global ARGS
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--source", required=True)
    ap.add_argument("--cmake", default="cmake")
    ap.add_argument("--work", required=True, help="scratch directory; WORK/debs caches the packages")
    ap.add_argument("--drop", action="append", default=[], help="leave this package out of the list (to see a failure)")
    ARGS = ap.parse_args()
    fs_serve.verdict("test_runtime_image", lambda: check_all(os.path.abspath(ARGS.work)))


if __name__ == "__main__":
    main()
