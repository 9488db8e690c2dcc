#!/usr/bin/python3
"""test_install_venv.py — featstore installed into a venv the way the docs say
(ctest: test_install_venv).

    /usr/bin/python3 tests/package/test_install_venv.py --source . --build BUILD --work DIR --version X.Y.Z [--cc cc]

1. `python3 -m venv --system-site-packages VENV`, `cmake --install BUILD
   --prefix VENV` and `VENV/bin/pip install --no-build-isolation --no-deps
   --no-index` of a copy of client-lib/python (pip would write build/ into
   the source tree): no network;
2. the installed programs and libraries have no RPATH/RUNPATH into the build
   tree, and featstore.pc's libdir/includedir are the venv's;
3. with a clean environment (PATH=VENV/bin:/usr/bin:/bin, no FEATSTORE_LIB,
   no PYTHONPATH): `featstore` is VENV/bin/featstore and says VERSION; it
   imports tests/data/cora.npz and serves it;
4. VENV/bin/python imports featstore from site-packages (metadata version =
   the library's), loads VENV/lib/libfeatstore.so.1 with no hint, and reads
   info and rows over unix:// and grpc:// (the plugin beside the installed
   library); the installed package has py.typed and the featstore.pyg
   subpackage;
5. pkg_probe.c built with PKG_CONFIG_PATH=VENV/LIBDIR/pkgconfig runs against
   the installed library and plugin and reads the same.

WORK is emptied first and removed when the test passes. Exit status: 0 pass,
1 fail, 77 (ctest's skip) without venv/ensurepip, setuptools or pkg-config.
~15 s on 2 cores.
"""
import argparse
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))  # tests/lib: fs_serve
import fs_serve  # noqa: E402
from pkg_util import Failed, build_probe, check_probe, finish, run_probe, runpaths, step, under  # noqa: E402

SKIP = 77
CLIENT = r"""
import importlib.metadata, json, os, sys
import featstore
out = {"module": featstore.__file__, "lib": featstore.library_path, "lib_version": featstore.library_version,
       "dist_version": importlib.metadata.version("featstore"), "nodes": {}}
for uri in sys.argv[1:]:
    with featstore.connect(uri) as c:
        with c.gather([0, 1, 2], "feat") as b:
            out["nodes"][uri] = [c.info().num_nodes, b.features.shape[1]]
out["plugin"] = [l.split()[-1] for l in open("/proc/self/maps") if "libfeatstore-grpc.so" in l][:1]
here = os.path.dirname(featstore.__file__)
out["shipped"] = [f for f in ("py.typed", "pyg/__init__.py", "pyg/loader.py") if os.path.isfile(os.path.join(here, f))]
print(json.dumps(out))
"""


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--source", required=True)
    p.add_argument("--build", required=True)
    p.add_argument("--work", required=True, help="scratch directory (emptied first)")
    p.add_argument("--libdir", default="lib", help="CMAKE_INSTALL_LIBDIR")
    p.add_argument("--cmake", default="cmake")
    p.add_argument("--cc", default="cc")
    p.add_argument("--version", required=True, help="the release it must say: CMake's PROJECT_VERSION")
    args = p.parse_args()
    for what, missing in (("pkg-config", not shutil.which("pkg-config")),
                          ("python3-venv (ensurepip)", importlib.util.find_spec("ensurepip") is None),
                          ("python3-setuptools", importlib.util.find_spec("setuptools") is None),
                          ("python3-wheel", importlib.util.find_spec("wheel") is None)):
        if missing:
            print(f"SKIP: {what} is not installed")
            return SKIP

    work, build = os.path.abspath(args.work), os.path.abspath(args.build)
    venv = os.path.join(work, "venv")
    libdir = os.path.join(venv, args.libdir)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    # what a user's shell has after `. VENV/bin/activate`, and nothing of ours
    clean = {"PATH": f"{venv}/bin:/usr/bin:/bin", "HOME": work, "LANG": "C.UTF-8"}
    t0 = time.monotonic()
    errors = []
    server = None
    try:
        # 1. the install
        step("venv", [sys.executable, "-m", "venv", "--system-site-packages", venv])
        step("cmake --install", [args.cmake, "--install", build, "--prefix", venv])
        src = os.path.join(work, "python-src")
        shutil.copytree(os.path.join(args.source, "client-lib", "python"), src,
                        ignore=shutil.ignore_patterns("__pycache__", "build", "*.egg-info"))
        step("pip install", [f"{venv}/bin/pip", "install", "--no-build-isolation", "--no-deps", "--no-index",
                             "--disable-pip-version-check", src], env=clean)

        # 2. no way back into the build tree
        bins = [os.path.join(venv, "bin", f) for f in ("featstore", "featstore-trainer")]
        libs = [os.path.join(libdir, f) for f in ("libfeatstore.so.1", "libfeatstore-grpc.so.1")]
        for f in bins + libs:
            if not os.path.isfile(f):
                errors.append(f"cmake --install did not install {f}")
                continue
            bad = [d for d in runpaths(f) if build in os.path.realpath(d) or "$ORIGIN" not in d]
            if bad:
                errors.append(f"{f} has RPATH/RUNPATH {bad}")
        pc_env = dict(clean, PKG_CONFIG_PATH=os.path.join(libdir, "pkgconfig"))
        for var, want in (("libdir", libdir), ("includedir", os.path.join(venv, "include"))):
            got = step("pkg-config", ["pkg-config", "--variable=" + var, "featstore"], env=pc_env).strip()
            if os.path.normpath(got) != want:
                errors.append(f"featstore.pc: {var}={got}, installed under {want}")

        # 3. the installed server, found on PATH
        featstore = shutil.which("featstore", path=clean["PATH"])
        if featstore != os.path.join(venv, "bin", "featstore"):
            errors.append(f"featstore on PATH is {featstore}, not the venv's")
        out = step("featstore version", ["featstore", "version"], env=clean)
        if args.version not in out:
            errors.append(f"featstore version says {out.strip()!r}")
        dataset = fs_serve.import_cora(featstore, os.path.join(work, "cora"))
        server, ready = fs_serve.start(featstore, dataset, os.path.join(work, "fs.sock"), env=clean)
        uris = ["unix://" + ready["unix"], "grpc://" + ready["grpc"]]

        # 4. the Python client: installed package, installed library, no hints
        client = os.path.join(work, "client.py")
        with open(client, "w") as f:
            f.write(CLIENT)
        out = step("python client", [f"{venv}/bin/python", client, *uris], env=clean, cwd=work)
        got = json.loads(out.splitlines()[-1])
        print(f"  {got}")
        if not under(got["module"], os.path.join(venv, "lib")):
            errors.append(f"import featstore found {got['module']}, not the venv's site-packages")
        if not under(got["lib"], venv):
            errors.append(f"import featstore loaded {got['lib']}, not the library installed in {venv}")
        if not got["plugin"] or not under(got["plugin"][0], venv):
            errors.append(f"grpc:// from Python mapped the plugin {got['plugin']}, not the one installed in {venv}")
        if got["shipped"] != ["py.typed", "pyg/__init__.py", "pyg/loader.py"]:
            errors.append(f"the installed package has {got['shipped']} of py.typed and featstore.pyg's modules")
        if got["dist_version"] != got["lib_version"]:
            errors.append(f"the Python package is {got['dist_version']}, the library {got['lib_version']}")
        for uri in uris:
            if got["nodes"].get(uri) != [2708, 1433]:
                errors.append(f"Python over {uri}: nodes, dim {got['nodes'].get(uri)}, want [2708, 1433]")

        # 5. a C program through pkg-config
        exe = os.path.join(work, "pkg_probe")
        build_probe(args.cc, exe, pc_env)
        report = run_probe(exe, uris, dict(clean, LD_LIBRARY_PATH=libdir))
        check_probe(report, uris, venv, "installed", errors)
    except (Failed, RuntimeError, subprocess.TimeoutExpired) as e:
        errors.append(str(e))
    finally:
        if server and fs_serve.stop(server) != 0:
            errors.append("featstore serve did not exit 0 on SIGTERM")
    return finish(errors, work, t0)


if __name__ == "__main__":
    sys.exit(main())
