"""bare_root.py — a bare Debian 12 root without debootstrap, shared by
test_runtime_image.py and test_deb_chroot.py: the Depends closure of a
package list (apt-cache depends --recurse), its .debs fetched with apt-get
download into a cache that survives reruns, unpacked with dpkg-deb -x into
an empty directory with /tmp and the /dev nodes a container gets, and
`featstore serve` run in a chroot of it.

Nothing is installed (no maintainer scripts run): what the root holds is
exactly the packages' files, so a library missing from the Depends is
missing from the root. Everything that needs root or a mirror raises Skip.
"""
import glob
import os
import shutil
import stat
import subprocess

import fs_serve
from fs_serve import Skip  # noqa: F401 (the tests import it from here)

ESSENTIAL = ["libc6", "libc-bin"]  # the dynamic loader; ldconfig
DEV_NODES = {"null": 3, "zero": 5, "full": 7, "random": 8, "urandom": 9}  # major 1 (mem), by minor


def run(cmd, **kw):
    """subprocess.run with text output captured; raises with the output on failure."""
    done = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {done.returncode}:\n{done.stdout}{done.stderr}")
    return done.stdout


def os_release():
    try:
        with open("/etc/os-release") as f:
            return dict(line.rstrip("\n").split("=", 1) for line in f if "=" in line)
    except OSError:
        return {}


def preconditions(why_bookworm=None):
    """Skip unless root, with chroot/apt/dpkg-deb, chroot permitted, and, when
    why_bookworm says why the root must be Debian 12, on Debian 12 (apt
    fetches this machine's release)."""
    if os.geteuid() != 0:
        raise Skip("not root: chroot needs it")
    for tool in ("chroot", "apt-get", "apt-cache", "dpkg-deb", "ldd"):
        if not shutil.which(tool):
            raise Skip(f"no {tool} on PATH")
    release = os_release()
    if why_bookworm and release.get("VERSION_CODENAME") != "bookworm":
        raise Skip(f"not Debian 12 (bookworm), {why_bookworm}: {release.get('PRETTY_NAME', '?')}")
    if subprocess.run(["chroot", "/", "true"], capture_output=True).returncode != 0:
        raise Skip("chroot is not permitted here (no CAP_SYS_CHROOT?)")


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


def download(pkgs, debs, who):
    """The .deb of each package, fetched into debs unless already there."""
    os.makedirs(debs, exist_ok=True)
    missing = [p for p in pkgs if not cached_deb(debs, p)]
    if missing:
        print(f"{who}: downloading {len(missing)} packages into {debs}", flush=True)
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


def make_root(root, debs):
    """An empty root with the .debs unpacked, /tmp and /dev. No ld.so.cache
    yet: call ldconfig() once everything is in."""
    shutil.rmtree(root, ignore_errors=True)
    os.makedirs(root)
    for deb in debs:
        run(["dpkg-deb", "-x", deb, root])
    os.makedirs(os.path.join(root, "tmp"), exist_ok=True)
    os.chmod(os.path.join(root, "tmp"), 0o1777)
    make_dev(root)


def ldconfig(root):
    """The root's own ldconfig writes its /etc/ld.so.cache (what a
    postinst's ldconfig or the Dockerfile's RUN ldconfig does)."""
    run(["chroot", root, "/sbin/ldconfig"])


def chroot(root, *args, timeout=60, env=None):
    """A command in the root: the CompletedProcess, text output captured."""
    return subprocess.run(["chroot", root] + list(args), capture_output=True, text=True, timeout=timeout, env=env)


def serve(root, featstore, dataset, sock="/tmp/featstore.sock", env=None):
    """`featstore serve` (featstore and dataset: paths in the root) in a
    chroot on ephemeral ports: (proc, ready). The chroot shares the network,
    so grpc:// and the metrics port are reachable from outside; the socket
    is ROOT + sock. The process is killed if it never gets ready."""
    proc = subprocess.Popen(["chroot", root, featstore, "serve", dataset, "--socket", sock, "--listen", "127.0.0.1:0",
                             "--metrics", "127.0.0.1:0"], stdout=subprocess.PIPE, preexec_fn=fs_serve.die_with_parent,
                            env=env)
    try:
        return proc, fs_serve.read_ready(proc)
    except Exception:
        proc.kill()
        proc.wait()
        proc.stdout.close()
        raise
