#!/usr/bin/python3
"""test_gpu_bundle.py — the GPU bundle (scripts/gpu-bundle.sh, issue 52) proved
without a GPU.

The bundle is made from this CUDA build (--from), must stay under 48 MiB, and
is put in an empty root made from glibc alone: the loader, the glibc
libraries its programs need (libc, libm, libdl, libpthread, ...) and /bin/sh,
nothing else of /usr/lib. There, in a chroot (its own mount and pid
namespaces, /proc mounted: Criterion runs each test in a child of
/proc/self/exe), the loader must resolve every program from the bundle, and
run.sh must reach the GPU tests and skip them for want of a CUDA driver
("no CUDA driver"), run the CPU twins (the simulated GPUs, the no-device
answers), every one passing, and exit 77.

Skipped (77) in a build without CUDA, or where neither root nor an
unprivileged user namespace may chroot.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys

GLIBC = re.compile(r"^(ld-linux[^ ]*|libc|libm|libdl|libpthread|librt|libresolv|libutil|libanl|libmvec)\.so")


def skip(why):
    print("SKIPPED: " + why)
    sys.exit(77)


def chroot_cmd(root):
    """The command prefix that runs a program chrooted into root with /proc mounted, or None."""
    for prefix in (["unshare", "-m", "-p", "-f"], ["unshare", "-r", "-m", "-p", "-f"]):
        if prefix[1] == "-m" and os.geteuid() != 0:
            continue
        cmd = prefix + ["--mount-proc=" + os.path.join(root, "proc"), "chroot", root]
        if subprocess.run(cmd + ["/bin/sh", "-c", "exit 0"], capture_output=True).returncode == 0:
            return cmd
    return None


def bare_root(root, bundle_bins):
    """The loader, the glibc libraries the programs (and sh) need, and /bin/sh."""
    for d in ("bin", "lib64", "lib/x86_64-linux-gnu", "tmp", "proc", "dev/shm"):
        os.makedirs(os.path.join(root, d), exist_ok=True)
    os.chmod(os.path.join(root, "tmp"), 0o1777)
    shutil.copy(os.path.realpath("/bin/sh"), os.path.join(root, "bin", "sh"))
    needed = set()
    for prog in bundle_bins + ["/bin/sh"]:
        out = subprocess.run(["ldd", prog], capture_output=True, text=True).stdout
        for line in out.splitlines():
            parts = line.split()
            if parts and GLIBC.match(os.path.basename(parts[0])):
                path = parts[2] if len(parts) > 2 and parts[1] == "=>" else parts[0]
                needed.add(path)
    for path in needed:
        dest = os.path.join(root, path.lstrip("/"))
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        shutil.copy(os.path.realpath(path), dest)
    return sorted(os.path.basename(p) for p in needed)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--source", required=True)
    ap.add_argument("--build", required=True)
    ap.add_argument("--work", required=True)
    a = ap.parse_args()
    version = subprocess.run([os.path.join(a.build, "cli", "featstore"), "version"], capture_output=True,
                             text=True).stdout
    if "CUDA kernels: yes" not in version:
        skip("this build has no CUDA kernels (no nvcc when it was configured)")
    shutil.rmtree(a.work, ignore_errors=True)
    root = os.path.join(a.work, "root")
    bundle = os.path.join(root, "bundle")
    made = subprocess.run(["bash", os.path.join(a.source, "scripts", "gpu-bundle.sh"), "--from", a.build, "--out",
                           bundle, "--max-mib", "48"], capture_output=True, text=True)
    print(made.stdout + made.stderr, end="")
    assert made.returncode == 0, "gpu-bundle.sh exited %d" % made.returncode
    bins = sorted(os.path.join(bundle, "bin", b) for b in os.listdir(os.path.join(bundle, "bin")))
    libs = bare_root(root, bins)
    print("bare root: /bin/sh and %s" % ", ".join(libs))
    chroot = chroot_cmd(root)
    if not chroot:
        skip("cannot chroot here: not root, and no unprivileged user namespaces")
    for b in bins:
        inside = "/bundle/bin/" + os.path.basename(b)
        listed = subprocess.run(chroot + ["/lib64/ld-linux-x86-64.so.2", "--library-path", "/bundle/lib", "--list",
                                          inside], capture_output=True, text=True)
        assert listed.returncode == 0 and "not found" not in listed.stdout, \
            "%s does not resolve in the bare root:\n%s%s" % (inside, listed.stdout, listed.stderr)
        for line in listed.stdout.splitlines():
            if "=>" in line:
                path = line.split("=>")[1].split()[0]
                assert path.startswith("/bundle/lib/") or GLIBC.match(os.path.basename(path)), \
                    "%s takes %s from outside the bundle" % (inside, path)
    print("%d programs resolve from the bundle" % len(bins))
    run = subprocess.run(chroot + ["/bin/sh", "/bundle/run.sh"], capture_output=True, text=True, timeout=600,
                         env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin"})
    print(run.stdout + run.stderr, end="")
    assert run.returncode == 77, "run.sh exited %d, not 77 (no GPU)" % run.returncode
    assert "no CUDA driver" in run.stdout, "the GPU tests skipped, saying there is no CUDA driver"
    assert re.search(r"tests: +\d+ passed, 0 failed", run.stdout), "nothing failed"
    for twin in ("twin_device_sim", "twin_typed_sim", "twin_no_device"):
        m = re.search(twin + r": Tested: (\d+) \| Passing: (\d+) \| Failing: 0 \| Crashing: 0", run.stdout)
        assert m and int(m.group(1)) > 0 and m.group(1) == m.group(2), "%s ran and passed" % twin
    print("test_gpu_bundle: ok")


if __name__ == "__main__":
    main()
