#!/usr/bin/python3
"""test_disk_tier_cgroup.py — issue 51's scaled case: a 1 GiB feature table
(R-MAT scale 19 x 512 float32) served with default options by a `featstore
serve` and read by a `featstore-trainer` over unix://, both in one 512 MiB
memory cgroup. The server must leave the table on disk by itself (the
cgroup's room, not --mem-budget), the trainer must get its batches, and no
process may be killed. Needs root and a memory cgroup (v1 or v2); else it
exits 77 (skipped), saying why (test_disk_tier covers the budget without
cgroups).

    sudo /usr/bin/python3 tests/python/test_disk_tier_cgroup.py --featstore BUILD/cli/featstore --lib BUILD/client-lib/libfeatstore.so
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))  # tests/lib: fs_serve
import fs_serve  # noqa: E402

LIMIT = 512 << 20


def make_cgroup():
    """A memory cgroup of LIMIT bytes: (path, v2), or a reason it cannot be made."""
    if os.geteuid() != 0:
        return None, "needs root to make a memory cgroup"
    for base, v2 in (("/sys/fs/cgroup", True), ("/sys/fs/cgroup/memory", False)):
        if not os.path.exists(os.path.join(base, "cgroup.controllers" if v2 else "memory.limit_in_bytes")):
            continue
        path = os.path.join(base, f"featstore-test-{os.getpid()}")
        try:
            os.mkdir(path)
            with open(os.path.join(path, "memory.max" if v2 else "memory.limit_in_bytes"), "w") as f:
                f.write(str(LIMIT))
            return (path, v2), None
        except OSError as e:
            if os.path.isdir(path):
                os.rmdir(path)
            return None, f"cannot make a memory cgroup under {base}: {e}"
    return None, "no memory cgroup hierarchy (v1 or v2) is mounted"


def body():
    args, _ = fs_serve.client_test_args(__doc__)
    if "libasan" in os.environ.get("LD_PRELOAD", ""):  # the sanitizer stage (tests/CMakeLists.txt fs_asan_python)
        raise fs_serve.Skip("an ASan build's shadow memory and quarantine make a 512 MiB limit mean nothing")
    cg, why = make_cgroup()
    if not cg:
        raise fs_serve.Skip(why)
    path, v2 = cg
    tmp = tempfile.mkdtemp(prefix="fs-disk-cgroup-")
    trainer = os.path.join(os.path.dirname(os.path.dirname(args.featstore)), "examples", "featstore-trainer")
    proc = None

    def enter():
        with open(os.path.join(path, "cgroup.procs"), "w") as f:
            f.write(str(os.getpid()))
        fs_serve.die_with_parent()  # and dies with the test
    try:
        data = os.path.join(tmp, "g")
        subprocess.run([args.featstore, "gen", "rmat", "--scale", "19", "--dim", "512", "--symmetrize", "--out", data],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=300)
        log = open(os.path.join(tmp, "serve.log"), "w+")
        proc = subprocess.Popen([args.featstore, "serve", data, "--socket", os.path.join(tmp, "sock"), "--metrics",
                                 "127.0.0.1:0"], stdout=subprocess.PIPE, stderr=log, preexec_fn=enter)
        ready = fs_serve.read_ready(proc, timeout=300)
        t = subprocess.run([trainer, f"unix://{ready['unix']}", "--batches", "10", "--batch", "512"],
                           capture_output=True, text=True, preexec_fn=enter, timeout=600)
        log.seek(0)
        text = log.read()
        assert re.search(r"table 'feat' \(1\.00 GiB\) is served from disk: it does not fit the memory budget "
                         r"\(the memory available less a margin\)", text), text
        assert t.returncode == 0 and "batches=10" in t.stdout, f"trainer: {t.returncode} {t.stdout} {t.stderr}"
        assert proc.poll() is None, "the server died"
        events = open(os.path.join(path, "memory.events" if v2 else "memory.oom_control")).read()
        kills = re.search(r"oom_kill (\d+)", events)
        assert not kills or kills.group(1) == "0", f"the cgroup killed a process: {events}"
        rate = re.search(r"batches_per_s=([0-9.]+)", t.stdout)
        return f"1 GiB table in a 512 MiB cgroup: {rate.group(1) if rate else '?'} batches/s, nothing killed"
    finally:
        if proc is not None and proc.poll() is None:
            fs_serve.stop(proc)
        shutil.rmtree(tmp, ignore_errors=True)
        for _ in range(50):
            try:
                os.rmdir(path)
                break
            except OSError:
                import time
                time.sleep(0.1)


if __name__ == "__main__":
    fs_serve.verdict("test_disk_tier_cgroup", body)
