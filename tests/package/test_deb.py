#!/usr/bin/python3
"""test_deb.py — the .deb packages (ctest: test_deb).

    /usr/bin/python3 tests/package/test_deb.py --build BUILD --work DIR --version X.Y.Z [--cpack cpack] [--libdir lib] [--cc cc]

`cpack --config BUILD/CPackConfig.cmake -B WORK/pkgs` must give exactly
featstore, libfeatstore1 and libfeatstore-dev, each with the files listed in
CONTENTS below and nothing else (no test or bench program), Maintainer,
Section and Description set, and Depends that name only packages dpkg or apt
knows here (or ours, at this version; dpkg-shlibdeps' libc6 among them).
featstore also carries the service (packaging/): the systemd unit at
/lib/systemd/system/featstore.service, as in the source tree, its ExecStart
the packaged /usr/bin/featstore reading the packaged config; that config
/etc/featstore/featstore.json listed in conffiles; a postinst that makes the
featstore system user and group with adduser, which Depends names. Whether
systemd accepts the unit is test_service.py's job.

Here, on this machine with everything else installed, they are checked by
extraction: whether their Depends alone are enough is test_deb_chroot.py's
job (a root made only from them, run in a chroot; needs root and a mirror).
This test: `dpkg -x` all three into one root, `ldd` each program and library
there with LD_LIBRARY_PATH=ROOT/usr/LIBDIR (no "not found", and
libfeatstore.so.1 is the extracted one), `ROOT/usr/bin/featstore version`,
the extracted server serving tests/data/cora.npz from the packaged config
(its paths pointed into WORK, gRPC added), and two clients on the
extracted library over unix:// and grpc:// (the plugin beside it):
pkg_probe.c built with the extracted headers and featstore.pc (pkg-config
--define-prefix), and the extracted featstore-trainer.

WORK is emptied first and removed when the test passes. Exit status: 0 pass,
1 fail, 77 (ctest's skip) without dpkg-deb, dpkg-shlibdeps or pkg-config.
~15 s on 2 cores.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))  # tests/lib: fs_serve
import fs_serve  # noqa: E402
from pkg_util import PACKAGES, Failed, build_probe, check_probe, cpack, deb_test_args, field, finish, parse_depends, run_probe, step, under  # noqa: E402

SKIP = 77


def contents(libdir, version):
    """Each package's files (not directories), paths as dpkg-deb -c lists them."""
    lib = f"usr/{libdir}"
    return {
        "featstore": {"usr/bin/featstore", "usr/bin/featstore-trainer", "lib/systemd/system/featstore.service",
                      "etc/featstore/featstore.json"},
        "libfeatstore1": {f"{lib}/libfeatstore.so.1", f"{lib}/libfeatstore.so.{version}",
                          f"{lib}/libfeatstore-grpc.so.1"},
        "libfeatstore-dev": {"usr/include/featstore/client.h", "usr/include/featstore/admin.h",
                             "usr/include/featstore/types.h", f"{lib}/libfeatstore.so",
                             f"{lib}/pkgconfig/featstore.pc"},
    }


def known(package):
    """dpkg (installed) or apt (available) knows the package."""
    for cmd in (["dpkg-query", "-W", package], ["apt-cache", "show", "--no-all-versions", package]):
        if shutil.which(cmd[0]) and subprocess.run(cmd, stdout=subprocess.DEVNULL,
                                                    stderr=subprocess.DEVNULL).returncode == 0:
            return True
    return False


def check_package(name, deb, files, errors):
    listing = step("dpkg-deb -c", ["dpkg-deb", "-c", deb])
    have = {line.split()[5].removeprefix("./") for line in listing.splitlines() if not line.startswith("d")}
    if have != files:
        errors.append(f"{name}: unexpected files {sorted(have - files)}, missing {sorted(files - have)}")
    for f in ("Maintainer", "Section", "Description"):
        if not field(deb, f):
            errors.append(f"{name}: no {f}")
    depends = field(deb, "Depends")
    print(f"  {name} Depends: {depends}")
    for alternatives in parse_depends(depends):
        if not any(n in PACKAGES or known(n) for n, _ in alternatives):
            errors.append(f"{name}: Depends on {' | '.join(n for n, _ in alternatives)}, which no package here "
                          "or in apt provides")
    return depends


SOURCE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
UNIT, CONFIG = "lib/systemd/system/featstore.service", "etc/featstore/featstore.json"


def control_file(deb, name, work):
    """A file of the package's control archive ("" when it has none)."""
    out = os.path.join(work, "control-" + os.path.basename(deb))
    step("dpkg-deb -e", ["dpkg-deb", "-e", deb, out])
    path = os.path.join(out, name)
    return open(path).read() if os.path.exists(path) else ""


def check_service(deb, root, depends, work, errors):
    """The unit, its config and the user they run as, as the package ships them."""
    unit = open(os.path.join(root, UNIT)).read()
    if unit != open(os.path.join(SOURCE, "packaging", "featstore.service")).read():
        errors.append(f"the packaged {UNIT} is not packaging/featstore.service")
    m = re.search(r"^ExecStart=(\S+) serve --config (\S+)$", unit, re.M)
    if not m or m.group(1) != "/usr/bin/featstore" or m.group(2) != "/" + CONFIG:
        errors.append(f"ExecStart does not run the packaged /usr/bin/featstore on /{CONFIG}: {m and m.group(0)}")
    if not re.search(r"^User=featstore$", unit, re.M) or not re.search(r"^Group=featstore$", unit, re.M):
        errors.append("the unit does not run as the featstore user and group")
    if f"/{CONFIG}" not in control_file(deb, "conffiles", work).split():
        errors.append(f"/{CONFIG} is not in the featstore package's conffiles")
    postinst = control_file(deb, "postinst", work)
    if not re.search(r"adduser --system [^\n]*featstore", postinst.replace("\\\n", " ")):
        errors.append("the featstore package's postinst makes no featstore system user (adduser --system)")
    if not any(n == "adduser" for alternatives in parse_depends(depends) for n, _ in alternatives):
        errors.append("the featstore package's postinst runs adduser, which its Depends do not name")


def config_for_test(root, dataset, sock, work):
    """The packaged config with its paths pointed into WORK and gRPC on an
    ephemeral loopback port: the file serve runs from."""
    cfg = json.load(open(os.path.join(root, CONFIG)))
    here = {"dataset": dataset, "socket": sock, "metrics": "127.0.0.1:0", "plan_dir": work}
    cfg.update({k: v for k, v in here.items() if k in cfg})
    cfg["listen"] = "127.0.0.1:0"
    path = os.path.join(work, "featstore.json")
    json.dump(cfg, open(path, "w"))
    return path


def main():
    args = deb_test_args(__doc__.split("\n")[0], "scratch directory (emptied first)").parse_args()
    for tool in ("dpkg-deb", "dpkg-shlibdeps", "pkg-config", "ldd", args.cpack):
        if not shutil.which(tool):
            print(f"SKIP: {tool} is not installed (dpkg-shlibdeps: apt-get install dpkg-dev)")
            return SKIP

    work, build = os.path.abspath(args.work), os.path.abspath(args.build)
    pkgs, root = os.path.join(work, "pkgs"), os.path.join(work, "root")
    libdir = os.path.join(root, "usr", args.libdir)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    t0 = time.monotonic()
    errors = []
    server = None
    try:
        # 1. the packages and what they hold
        debs = cpack(args.cpack, build, pkgs)
        want = contents(args.libdir, args.version)
        if set(debs) != set(want):
            raise Failed(f"cpack made {sorted(debs)}, want {sorted(want)}")
        depends = {name: check_package(name, deb, want[name], errors) for name, deb in debs.items()}
        for name in ("featstore", "libfeatstore-dev"):
            if f"libfeatstore1 (= {args.version})" not in depends[name]:
                errors.append(f"{name} does not depend on libfeatstore1 (= {args.version})")
        if "libc6" not in depends["libfeatstore1"]:
            errors.append("libfeatstore1 does not depend on libc6: dpkg-shlibdeps did not run")
        for deb in debs.values():
            step("dpkg -x", ["dpkg", "-x", deb, root])
        check_service(debs["featstore"], root, depends["featstore"], work, errors)

        # 2. every ELF file resolves its libraries, libfeatstore from the packages
        env = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "LD_LIBRARY_PATH": libdir}
        for f in ("usr/bin/featstore", "usr/bin/featstore-trainer", f"usr/{args.libdir}/libfeatstore.so.1",
                  f"usr/{args.libdir}/libfeatstore-grpc.so.1"):
            out = step("ldd", ["ldd", os.path.join(root, f)], env=env)
            if "not found" in out:
                errors.append(f"ldd {f}: " + "; ".join(l.strip() for l in out.splitlines() if "not found" in l))
            m = re.search(r"libfeatstore\.so\.1 => (\S+)", out)
            if m and not under(m.group(1), root):
                errors.append(f"{f} resolves libfeatstore.so.1 to {m.group(1)}, not the package's")
        pc = open(os.path.join(libdir, "pkgconfig", "featstore.pc")).read()
        if not pc.startswith("prefix=/usr\n"):
            errors.append("the packaged featstore.pc does not say prefix=/usr: " + pc.splitlines()[0])

        # 3. the packaged server and two clients on the packaged library
        featstore = os.path.join(root, "usr", "bin", "featstore")
        out = step("featstore version", [featstore, "version"], env=env)
        if args.version not in out:
            errors.append(f"featstore version says {out.strip()!r}")
        dataset = fs_serve.import_cora(featstore, os.path.join(work, "cora"))
        cfg = config_for_test(root, dataset, os.path.join(work, "fs.sock"), work)
        server = subprocess.Popen([featstore, "serve", "--config", cfg], stdout=subprocess.PIPE, env=env,
                                  preexec_fn=fs_serve.die_with_parent)
        ready = fs_serve.read_ready(server)
        uris = ["unix://" + ready["unix"], "grpc://" + ready["grpc"]]
        exe = os.path.join(work, "pkg_probe")
        build_probe(args.cc, exe, dict(env, PKG_CONFIG_PATH=os.path.join(libdir, "pkgconfig")),
                    ["--define-prefix"])
        report = run_probe(exe, uris, env)
        check_probe(report, uris, root, "packaged", errors)
        for uri in uris:
            out = step("featstore-trainer", [os.path.join(root, "usr", "bin", "featstore-trainer"), uri,
                                             "--batches", "3", "--batch", "64", "--fanouts", "5,5"], env=env)
            if not re.search(r"^TRAINER .*batches=3 ", out, re.M):
                errors.append(f"featstore-trainer over {uri} printed no summary of 3 batches:\n{out}")
    except (Failed, RuntimeError, subprocess.TimeoutExpired) as e:
        errors.append(str(e))
    finally:
        if server and fs_serve.stop(server) != 0:
            errors.append("featstore serve did not exit 0 on SIGTERM")
    return finish(errors, work, t0)


if __name__ == "__main__":
    sys.exit(main())
