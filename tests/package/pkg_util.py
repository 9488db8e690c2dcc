"""pkg_util.py — what test_install_venv.py, test_deb.py and
test_deb_chroot.py share: running a step with its time, the ELF checks on
installed files, pkg_probe.c built through pkg-config and run against a
server, and the .deb packages cpack makes with their control fields."""
import argparse
import os
import re
import shutil
import subprocess
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PROBE_C = os.path.join(HERE, "pkg_probe.c")


PACKAGES = ("featstore", "libfeatstore1", "libfeatstore-dev")  # what cpack makes, by package name


class Failed(Exception):
    pass


def step(name, cmd, env=None, cwd=None, timeout=300):
    """Runs cmd, prints its time; its output, or Failed with the output's tail."""
    t0 = time.monotonic()
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, cwd=cwd,
                       timeout=timeout)
    print(f"[{time.monotonic() - t0:6.1f} s] {name}: {' '.join(cmd)}", flush=True)
    if r.returncode != 0:
        print(r.stdout[-6000:])
        raise Failed(f"{name} exited {r.returncode}")
    return r.stdout


def runpaths(path):
    """An ELF file's RPATH and RUNPATH entries."""
    out = subprocess.run(["readelf", "-d", "-W", path], stdout=subprocess.PIPE, text=True, check=True).stdout
    return [d for m in re.findall(r"\((?:RPATH|RUNPATH)\)\s+\S+ \S+: \[([^\]]*)\]", out) for d in m.split(":")]


def under(path, root):
    return os.path.realpath(path).startswith(os.path.realpath(root) + os.sep)


def build_probe(cc, out, env, pkg_config_args=()):
    """pkg_probe.c compiled and linked with `pkg-config --cflags --libs featstore`."""
    flags = step("pkg-config", ["pkg-config", *pkg_config_args, "--cflags", "--libs", "featstore"], env=env).split()
    print(f"  flags: {' '.join(flags)}")
    step("compile probe", [cc, "-std=c11", "-Wall", "-Wextra", "-Werror", PROBE_C, "-o", out] + flags, env=env)
    return flags


def run_probe(exe, uris, env, prefix=()):
    """pkg_probe's report: {"LIB": path, "PLUGIN": path, "NODES": {uri: (n, dim)}}.
    prefix goes before the program (["chroot", root] runs it in a root)."""
    out = step("probe", [*prefix, exe, *uris], env=env, timeout=120)
    print("  " + out.strip().replace("\n", "\n  "))
    report = {"NODES": {}}
    for line in out.splitlines():
        key, _, rest = line.partition(" ")
        if key == "NODES":
            uri, n, dim = rest.split()
            report["NODES"][uri] = (int(n), int(dim))
        else:
            report[key] = rest.strip()
    return report


def check_probe(report, uris, root, what, errors):
    """pkg_probe must have mapped the library and plugin under root (`what`:
    "installed", "packaged") and read Cora's 2708 x 1433 rows over each URI."""
    if not under(report.get("LIB", ""), root) or not under(report.get("PLUGIN", ""), root):
        errors.append(f"pkg_probe ran with {report.get('LIB')} and {report.get('PLUGIN')}, not the {what} "
                      f"library and plugin")
    for uri in uris:
        if report["NODES"].get(uri) != (2708, 1433):
            errors.append(f"pkg_probe over {uri}: {report['NODES'].get(uri)}, want (2708, 1433)")


def finish(errors, work, t0):
    """The test's end: its time, each failure, the exit status; the work
    directory is kept for a look after a failure, removed after a pass."""
    print(f"total {time.monotonic() - t0:.1f} s")
    for e in errors:
        print("FAIL: " + e)
    if errors:
        print(f"kept {work} for a look")
        return 1
    shutil.rmtree(work, ignore_errors=True)
    print("PASS")
    return 0


def deb_test_args(description, work_help):
    """The arguments both .deb tests take (test_deb, test_deb_chroot): the
    build tree, a scratch directory, cpack, the libdir the build installs
    to and a C compiler for the probe. Returns the parser, for more."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--build", required=True)
    p.add_argument("--work", required=True, help=work_help)
    p.add_argument("--cpack", default="cpack")
    p.add_argument("--libdir", default="lib", help="CMAKE_INSTALL_LIBDIR")
    p.add_argument("--cc", default="cc")
    p.add_argument("--version", required=True, help="the release the packages carry: CMake's PROJECT_VERSION")
    return p


def cpack(cpack_cmd, build, out):
    """`cpack --config BUILD/CPackConfig.cmake -B out`: {package name: .deb path}."""
    step("cpack", [cpack_cmd, "--config", os.path.join(build, "CPackConfig.cmake"), "-B", out])
    return {f.split("_")[0]: os.path.join(out, f) for f in os.listdir(out) if f.endswith(".deb")}


def field(deb, name):
    """A control field of a .deb ("" when it has none)."""
    return subprocess.run(["dpkg-deb", "-f", deb, name], stdout=subprocess.PIPE, text=True).stdout.strip()


def parse_depends(text):
    """A Depends field as a list of alternatives, each a list of (name,
    relation) pairs: "a (>= 1) | b, c" -> [[("a", ">= 1"), ("b", "")], [("c", "")]].
    Architecture qualifiers (:any) are dropped with the name's tail."""
    result = []
    for group in filter(None, (g.strip() for g in text.split(","))):
        alts = []
        for alt in group.split("|"):
            m = re.match(r"\s*([a-z0-9][a-z0-9+.-]*)(?::\S+)?\s*(?:\(\s*([<>=]+)\s*([^)\s]+)\s*\))?", alt)
            alts.append((m.group(1), f"{m.group(2)} {m.group(3)}" if m.group(2) else ""))
        result.append(alts)
    return result
