#!/usr/bin/python3
"""test_deb_chroot.py — the .deb packages' Depends are enough (ctest:
test_deb_chroot; labels package, slow).

test_deb.py checks the packages on this machine, where everything else is
installed too, so it cannot see a Depends that is missing. Here cpack's
featstore, libfeatstore1 and libfeatstore-dev go into a root made only from
their own Depends: each package's Depends (dpkg-deb -f; the first of
alternatives, relations checked against the fetched versions) outside our
three, plus libc6 and libc-bin, with their Depends closure, are fetched and
unpacked into an empty root (tests/package/bare_root.py), our three unpacked into it
too, and the root's ldconfig run as libfeatstore1's postinst would. In a
chroot: `featstore version` says VERSION, `featstore import` and `serve`
on Cora reach READY, the packaged featstore-trainer reads over unix:// and
grpc://, pkg_probe.c built on this machine through the unpacked -dev
package's featstore.pc (PKG_CONFIG_SYSROOT_DIR) reads over both too, and
SIGTERM -> exit 0. Then the root without NEGATIVE's package must fail to
start featstore, naming its library: the check sees a missing Depends.

    test_deb_chroot.py --build BUILD --work DIR [--cpack cpack] [--libdir lib] [--cc cc] [--drop PKG]

--drop leaves a package out of the Depends (to see the test fail). Exits 77
(skipped, reason printed) when not root, without chroot/apt/dpkg-deb/
pkg-config, or when the packages cannot be fetched. WORK/debs caches the
fetched .debs across runs; the rest of WORK is removed when the test passes.
"""
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))  # tests/lib: fs_serve
import bare_root  # noqa: E402
import fs_serve  # noqa: E402
from bare_root import ESSENTIAL, Skip  # noqa: E402
from pkg_util import Failed, PACKAGES, build_probe, cpack, deb_test_args, field, parse_depends, run_probe  # noqa: E402

SKIP = 77
NEGATIVE = ("libjansson4", "libjansson.so.4")  # a package featstore's Depends name, and its library
SOCK = "/tmp/featstore.sock"  # in the root
CORA = (2708, 1433)  # nodes, feature width
WHO = "test_deb_chroot"
# The chroot's environment: nothing of this machine's (an LD_LIBRARY_PATH
# from outside could name directories that happen to exist in the root).
ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin", "LANG": "C.UTF-8"}


def say(msg):
    print(f"{WHO}: {msg}", flush=True)


def preconditions(args):
    bare_root.preconditions()
    for tool in ("pkg-config", "dpkg", args.cpack, args.cc):
        if not shutil.which(tool):
            raise Skip(f"no {tool} on PATH")


def foreign_depends(debs, drop):
    """The first alternative of every Depends of our packages that is not one
    of ours (less drop): {name: [relations]}; ours are in the root anyway."""
    wanted = {}
    for name, deb in debs.items():
        depends = field(deb, "Depends")
        say(f"{name} Depends: {depends}")
        for alternatives in parse_depends(depends):
            dep, relation = alternatives[0]
            if dep not in PACKAGES and dep not in drop:
                wanted.setdefault(dep, []).append(relation)
    if not wanted:
        raise AssertionError("our packages depend on nothing: dpkg-shlibdeps did not run")
    return wanted


def check_relations(wanted, fetched):
    """Each fetched Depends satisfies its version relation: apt's candidate
    is what a real install would get, so an older one means the packages
    cannot be installed here."""
    for dep, relations in wanted.items():
        version = field(fetched[dep], "Version")
        for relation in filter(None, relations):
            op, want = relation.split()
            if subprocess.run(["dpkg", "--compare-versions", version, op, want]).returncode != 0:
                raise AssertionError(f"Depends {dep} ({relation}), but apt has {dep} {version}")


def make_root(root, fetched, debs):
    """The fetched closure and our three packages unpacked, then ldconfig as
    libfeatstore1's postinst runs it (our libraries land in the cache)."""
    bare_root.make_root(root, list(fetched) + list(debs))
    bare_root.ldconfig(root)
    cache = bare_root.chroot(root, "/sbin/ldconfig", "-p", env=ENV).stdout
    if "libfeatstore.so.1 " not in cache:
        raise AssertionError(f"ldconfig in the root did not cache libfeatstore.so.1:\n{cache}")


def in_root(root, *cmd, timeout=60):
    """cmd in the root; its stdout, or AssertionError with its output."""
    done = bare_root.chroot(root, *cmd, timeout=timeout, env=ENV)
    if done.returncode != 0:
        raise AssertionError(f"in the root, {' '.join(cmd)} exited {done.returncode}:\n{done.stdout}{done.stderr}")
    return done.stdout


def check_version(root, version):
    out = in_root(root, "/usr/bin/featstore", "version")
    if version not in out:
        raise AssertionError(f"featstore version in the root says {out.strip()!r}, want {version}")
    say(f"featstore version in the root: {out.strip()}")


def import_cora(root):
    """Cora imported by the packaged featstore (its npz reader's libraries
    must be in the root too)."""
    os.makedirs(os.path.join(root, "data"), exist_ok=True)
    shutil.copy(fs_serve.CORA_NPZ, os.path.join(root, "data", "cora.npz"))
    in_root(root, "/usr/bin/featstore", "import", "npz", "/data/cora.npz", "--out", "/data/cora", "--symmetrize")
    return "/data/cora"


def build_probe_in_root(root, args, work):
    """pkg_probe.c compiled here with the root's featstore.pc, headers and
    libfeatstore.so (PKG_CONFIG_SYSROOT_DIR prefixes the .pc's /usr paths
    with the root), then copied into the root's /usr/local/bin."""
    pcdir = os.path.join(root, "usr", args.libdir, "pkgconfig")
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8", "PKG_CONFIG_LIBDIR": pcdir,
           "PKG_CONFIG_SYSROOT_DIR": root}
    exe = os.path.join(work, "pkg_probe")
    flags = build_probe(args.cc, exe, env)
    if not any(f.startswith("-I" + root) for f in flags):
        raise AssertionError(f"pkg-config gave no include directory in the root: {flags}")
    os.makedirs(os.path.join(root, "usr", "local", "bin"), exist_ok=True)
    shutil.copy(exe, os.path.join(root, "usr", "local", "bin", "pkg_probe"))
    return "/usr/local/bin/pkg_probe"


def check_trainer(root, uri):
    out = in_root(root, "/usr/bin/featstore-trainer", uri, "--batches", "3", "--batch", "64", "--fanouts", "5,5")
    if not re.search(r"^TRAINER .*batches=3 ", out, re.M):
        raise AssertionError(f"featstore-trainer over {uri} in the root printed no summary of 3 batches:\n{out}")


def check_probe(root, probe, uris):
    """pkg_probe in the root: both URIs read Cora, with the root's library
    (the chroot has no other; no /proc there, so the plugin's path is not
    shown, but grpc:// answering means it loaded from the root)."""
    report = run_probe(probe, uris, ENV, prefix=["chroot", root])
    lib = report.get("LIB", "")
    if not re.fullmatch(r"/usr/\S*/libfeatstore\.so\.1", lib):
        raise AssertionError(f"pkg_probe in the root mapped {lib!r}, not the packaged /usr/.../libfeatstore.so.1")
    for uri in uris:
        if report["NODES"].get(uri) != CORA:
            raise AssertionError(f"pkg_probe over {uri} in the root: {report['NODES'].get(uri)}, want {CORA}")


def check_serve(root, args, work):
    """The packaged server on Cora in the root: READY, /healthz 200, the
    packaged trainer and pkg_probe over unix:// and grpc://, SIGTERM -> 0."""
    dataset = import_cora(root)
    probe = build_probe_in_root(root, args, work)
    proc, ready = bare_root.serve(root, "/usr/bin/featstore", dataset, SOCK, env=ENV)
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{ready['metrics']}/healthz", timeout=10) as r:
            if r.status != 200:
                raise AssertionError(f"/healthz answered {r.status}")
        uris = ["unix://" + SOCK, "grpc://" + ready["grpc"]]
        for uri in uris:
            check_trainer(root, uri)
        check_probe(root, probe, uris)
    finally:
        status = fs_serve.stop(proc)
    if status != 0:
        raise AssertionError(f"featstore serve in the root exited {status} on SIGTERM")
    say("in the root: featstore serve READY, /healthz 200, featstore-trainer and pkg_probe read over unix:// and "
        "grpc://, exit 0")


def check_negative(wanted, debs, work):
    """The root without NEGATIVE's package must not start featstore, and the
    loader must name the library: a Depends short of a library fails."""
    pkg, lib = NEGATIVE
    if pkg not in wanted:
        raise AssertionError(f"no package Depends on {pkg}: featstore no longer links {lib}? (update NEGATIVE)")
    names = bare_root.closure([d for d in wanted if d != pkg] + ESSENTIAL)
    if pkg in names:
        raise AssertionError(f"{pkg} comes in through another package's Depends: pick another NEGATIVE")
    root = os.path.join(work, "root-without")
    fetched = bare_root.download(names, os.path.join(work, "debs"), WHO)
    make_root(root, fetched.values(), debs.values())
    done = bare_root.chroot(root, "/usr/bin/featstore", "version", env=ENV)
    if done.returncode == 0 or lib not in done.stderr:
        raise AssertionError(f"without {pkg} featstore still ran (exit {done.returncode}): {done.stderr}")
    say(f"without {pkg}: {done.stderr.strip()}")
    shutil.rmtree(root, ignore_errors=True)


def clean(work):
    """WORK emptied but for the .deb cache."""
    os.makedirs(work, exist_ok=True)
    for entry in os.listdir(work):
        path = os.path.join(work, entry)
        if entry == "debs":
            continue
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, ignore_errors=True)
        else:
            os.unlink(path)


def main():
    ap = deb_test_args(__doc__.split("\n")[0], "scratch directory; WORK/debs caches the fetched packages")
    ap.add_argument("--drop", action="append", default=[], help="leave this Depends out of the root (to see a failure)")
    args = ap.parse_args()
    work, t0 = os.path.abspath(args.work), time.monotonic()
    try:
        preconditions(args)
        clean(work)
        debs = cpack(args.cpack, os.path.abspath(args.build), os.path.join(work, "pkgs"))
        if set(debs) != set(PACKAGES):
            raise AssertionError(f"cpack made {sorted(debs)}, want {sorted(PACKAGES)}")
        wanted = foreign_depends(debs, args.drop)
        names = bare_root.closure(sorted(wanted) + ESSENTIAL)
        fetched = bare_root.download(names, os.path.join(work, "debs"), WHO)
        check_relations(wanted, fetched)
        root = os.path.join(work, "root")
        make_root(root, fetched.values(), debs.values())
        say(f"root of our 3 packages and {len(names)} others (their Depends: {' '.join(sorted(wanted))})")
        check_version(root, args.version)
        check_serve(root, args, work)
        if not args.drop:
            check_negative(wanted, debs, work)
    except Skip as e:
        say(f"skipped: {e}")
        return SKIP
    except (AssertionError, RuntimeError, Failed, subprocess.TimeoutExpired) as e:
        say(f"FAILED: {e}")
        say(f"kept {work} for a look")
        return 1
    clean(work)
    say(f"ok ({time.monotonic() - t0:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
