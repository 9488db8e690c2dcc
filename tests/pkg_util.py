"""pkg_util.py — what test_install_venv.py and test_deb.py share: running a
step with its time, the ELF checks on installed files, and pkg_probe.c
built through pkg-config and run against a server."""
import os
import re
import subprocess
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PROBE_C = os.path.join(HERE, "pkg_probe.c")


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


def run_probe(exe, uris, env):
    """pkg_probe's report: {"LIB": path, "PLUGIN": path, "NODES": {uri: (n, dim)}}."""
    out = step("probe", [exe, *uris], env=env, timeout=120)
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
