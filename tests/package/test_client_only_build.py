#!/usr/bin/python3
"""test_client_only_build.py — the client-only build works (ctest: test_client_only_build).

    /usr/bin/python3 tests/package/test_client_only_build.py --source . --work BUILD/tests/client-only
        --cmake cmake --cc cc [--generator "Unix Makefiles"] [--reference-lib BUILD/client-lib/libfeatstore.so]

Configures the source tree with -DFS_SERVER=OFF (and -DFS_WITH_CUDA=OFF: nvcc
would only slow it down; the client library links the CPU engines either
way) into WORK/build, builds it, and checks:

1. the build produced libfeatstore.so, libfeatstore-grpc.so.N and
   featstore.pc, and no server or CLI (no `featstore` program, no server/
   directory);
2. its libfeatstore.so NEEDs no gRPC/protobuf/nanopb/CUDA library and
   exports the same symbols as the full build's (--reference-lib);
3. `cmake --install` into WORK/prefix (the configured CMAKE_INSTALL_PREFIX)
   installs the three headers, the libraries and lib/pkgconfig/featstore.pc;
4. a small C program compiled with `pkg-config --cflags --libs featstore`
   against that prefix (-Wall -Wextra -Werror) links, runs with the
   installed libfeatstore.so (checked with dladdr), and fs_version() equals
   the header's FS_VERSION_*; a grpc:// connection to a closed port loads
   the installed plugin (it fails as unavailable, not as "cannot load");
5. cpack (beside --cmake) packages it as libfeatstore1 and libfeatstore-dev
   only: no featstore package (left out, with a note, without dpkg-deb and
   dpkg-shlibdeps).

WORK is emptied first and removed when the test passes (kept for a look
when it fails). Exit status: 0 pass, 1 fail, 77 (ctest's skip) without
pkg-config. Prints the time each step took.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pkg_util import Failed, finish, step  # noqa: E402

SKIP = 77
FORBIDDEN_DEPS = re.compile(r"(grpc|libgpr|absl|libupb|protobuf|nanopb|libssl|cuda|cudart|libnv)", re.IGNORECASE)

PROGRAM = r"""
#define _GNU_SOURCE /* dladdr */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include <featstore/admin.h>

#define STR_(x) #x
#define STR(x) STR_(x)

int main(void)
{
    const char *want = STR(FS_VERSION_MAJOR) "." STR(FS_VERSION_MINOR) "." STR(FS_VERSION_PATCH);
    Dl_info where;
    if (!dladdr((void *)fs_version, &where) || !where.dli_fname) {
        fprintf(stderr, "dladdr(fs_version) failed\n");
        return 1;
    }
    printf("LIB %s\n", where.dli_fname);
    printf("VERSION %s\n", fs_version());
    if (strcmp(fs_version(), want) != 0) {
        fprintf(stderr, "fs_version() is %s, the header says %s\n", fs_version(), want);
        return 1;
    }
    fs_connect_opts_t opts = FS_CONNECT_OPTS_INIT;
    opts.timeout_ms = 3000;
    fs_client_t *c = NULL;
    fs_status_t st = fs_connect("grpc://127.0.0.1:1", &opts, &c);
    printf("GRPC %d %s: %s\n", (int)st, fs_strerror(st), c ? fs_client_errstr(c) : "");
    fs_close(c);
    return st == FS_ERR_UNSUPPORTED || st == FS_ERR_VERSION ? 3 : 0;
}
"""


def exported(lib):
    out = subprocess.run(["nm", "-D", "--defined-only", lib], stdout=subprocess.PIPE, text=True, check=True).stdout
    return {line.split()[-1].split("@")[0] for line in out.splitlines() if line.split()}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--source", required=True)
    p.add_argument("--work", required=True, help="scratch directory (emptied first)")
    p.add_argument("--cmake", default="cmake")
    p.add_argument("--cc", default="cc")
    p.add_argument("--generator", default=None)
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--reference-lib", default=None, help="the full build's libfeatstore.so")
    args = p.parse_args()
    if not shutil.which("pkg-config"):
        print("SKIP: pkg-config is not installed")
        return SKIP

    work = os.path.abspath(args.work)
    build, prefix = os.path.join(work, "build"), os.path.join(work, "prefix")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    t0 = time.monotonic()
    errors = []
    try:
        gen = ["-G", args.generator] if args.generator else []
        step("configure", [args.cmake, "-S", args.source, "-B", build] + gen +
             ["-DFS_SERVER=OFF", "-DFS_WITH_CUDA=OFF", "-DCMAKE_BUILD_TYPE=RelWithDebInfo",
              "-DCMAKE_C_COMPILER=" + args.cc, "-DCMAKE_INSTALL_PREFIX=" + prefix])
        step("build", [args.cmake, "--build", build, "-j", str(args.jobs)], timeout=540)  # ctest gives the test 600 s

        # 1. what the build made, and what it did not
        lib = os.path.join(build, "client-lib", "libfeatstore.so")
        for f in ("client-lib/libfeatstore.so", "client-lib/featstore.pc", "client-lib/libfeatstore.a"):
            if not os.path.exists(os.path.join(build, f)):
                errors.append(f"the client-only build did not produce {f}")
        plugins = [f for f in os.listdir(os.path.join(build, "client-lib")) if f.startswith("libfeatstore-grpc.so")]
        if not plugins:
            errors.append("the client-only build did not produce libfeatstore-grpc.so.N")
        for f in ("server", "cli", "placement", "tests", "cli/featstore", "dataset/libfs_dataset.a"):
            if os.path.exists(os.path.join(build, f)):
                errors.append(f"the client-only build made {f}: FS_SERVER=OFF should leave it out")
        # the dataset reader alone is the client's (trainers open typed datasets: proto/fs_hetero.h)
        if not os.path.exists(os.path.join(build, "dataset", "libfs_dataset_core.a")):
            errors.append("the client-only build did not build the dataset reader (fs_dataset_core)")
        print(f"built: libfeatstore.so, {', '.join(plugins)}, featstore.pc; no server, CLI or tests")

        # 2. the library itself
        if os.path.exists(lib):
            needed = re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]",
                                step("readelf", ["readelf", "-d", "-W", lib]))
            print(f"NEEDED: {', '.join(needed)}")
            errors += [f"client-only libfeatstore.so NEEDs {n}" for n in needed if FORBIDDEN_DEPS.search(n)]
            if args.reference_lib:
                mine, full = exported(lib), exported(args.reference_lib)
                if mine != full:
                    errors.append(f"client-only libfeatstore.so exports differ from the full build's: only here "
                                  f"{sorted(mine - full)}, only there {sorted(full - mine)}")
                else:
                    print(f"exports: the same {len(mine)} symbols as the full build's")

        # 3. the install
        step("install", [args.cmake, "--install", build])
        for f in ("include/featstore/client.h", "include/featstore/admin.h", "include/featstore/types.h",
                  "lib/libfeatstore.so", "lib/pkgconfig/featstore.pc"):
            if not os.path.exists(os.path.join(prefix, f)):
                errors.append(f"cmake --install did not install {f}")
        if os.path.exists(os.path.join(prefix, "lib", "libfeatstore.a")):
            errors.append("cmake --install installed libfeatstore.a, which cannot link outside the build tree")
        if not any(f.startswith("libfeatstore-grpc.so") for f in os.listdir(os.path.join(prefix, "lib"))):
            errors.append("cmake --install did not install libfeatstore-grpc.so.N")

        # 4. a program built the way docs/serving.md says: pkg-config featstore
        env = dict(os.environ, PKG_CONFIG_PATH=os.path.join(prefix, "lib", "pkgconfig"))
        flags = step("pkg-config", ["pkg-config", "--cflags", "--libs", "featstore"], env=env).split()
        print(f"pkg-config --cflags --libs featstore: {' '.join(flags)}")
        if "-I" + os.path.join(prefix, "include") not in flags or "-L" + os.path.join(prefix, "lib") not in flags:
            errors.append(f"featstore.pc does not point into the install prefix {prefix}: {' '.join(flags)}")
        src, exe = os.path.join(work, "hello.c"), os.path.join(work, "hello")
        with open(src, "w") as f:
            f.write(PROGRAM)
        step("compile", [args.cc, "-std=c11", "-Wall", "-Wextra", "-Werror", src, "-o", exe] + flags, env=env)
        run_env = dict(os.environ, LD_LIBRARY_PATH=os.path.join(prefix, "lib"))
        out = subprocess.run([exe], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=run_env,
                             timeout=60)
        print(out.stdout.strip())
        if out.returncode == 3:
            errors.append("the installed libfeatstore.so cannot load its installed gRPC plugin (see GRPC above)")
        elif out.returncode != 0:
            errors.append(f"the pkg-config program exited {out.returncode}")
        m = re.search(r"^LIB (\S+)", out.stdout, re.M)
        if m and not os.path.realpath(m.group(1)).startswith(os.path.realpath(prefix) + os.sep):
            errors.append(f"the program ran with {m.group(1)}, not the installed library under {prefix}")

        # 5. its packages: the client's two, no server
        cpack = os.path.join(os.path.dirname(shutil.which(args.cmake) or args.cmake), "cpack")
        if all(shutil.which(t) for t in (cpack, "dpkg-deb", "dpkg-shlibdeps")):
            pkgs = os.path.join(work, "pkgs")
            step("cpack", [cpack, "--config", os.path.join(build, "CPackConfig.cmake"), "-B", pkgs])
            names = sorted(f.split("_")[0] for f in os.listdir(pkgs) if f.endswith(".deb"))
            print(f"packages: {', '.join(names)}")
            if names != ["libfeatstore-dev", "libfeatstore1"]:
                errors.append(f"cpack of the client-only build made {names}, want libfeatstore-dev, libfeatstore1")
        else:
            print(f"note: no packages checked ({cpack}, dpkg-deb or dpkg-shlibdeps is missing)")
    except Failed as e:
        errors.append(str(e))
    return finish(errors, work, t0)


if __name__ == "__main__":
    sys.exit(main())
