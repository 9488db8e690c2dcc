#!/usr/bin/python3
"""test_service.py — packaging/featstore.service is a unit systemd accepts
(ctest: test_service).

    /usr/bin/python3 tests/package/test_service.py --featstore BUILD/cli/featstore --work DIR

1. `systemd-analyze verify` on the unit exits 0 and prints nothing: it
   exits 0 on an unknown key or a bad value too, printing them, so any
   line is a failure. verify checks that ExecStart's program exists: the
   unit's /usr/bin/featstore (where the .deb puts it: test_deb.py) is
   replaced by --featstore in the copy verified, and nothing else is.
2. What the service relies on is set: Type=notify (serve says READY=1),
   User and Group featstore, RuntimeDirectory=featstore holding the packaged
   config's socket, Restart=on-failure, LimitNOFILE, LimitMEMLOCK, the
   config /etc/featstore/featstore.json on ExecStart.
3. packaging/featstore.json names only keys serve knows, with its socket in
   that runtime directory: `featstore serve --config` on it, with a socket,
   ports and dataset of the test's given on the command line (which wins),
   reaches READY.

Exit status: 0 pass, 1 fail, 77 (ctest's skip) without systemd-analyze
(Debian: systemd).
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))  # tests/lib: fs_serve
import fs_serve  # noqa: E402

SKIP = 77
SOURCE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
UNIT = os.path.join(SOURCE, "packaging", "featstore.service")
CONFIG = os.path.join(SOURCE, "packaging", "featstore.json")
WANT = {"Type": "notify", "User": "featstore", "Group": "featstore", "RuntimeDirectory": "featstore",
        "Restart": "on-failure", "LimitNOFILE": None, "LimitMEMLOCK": None,
        "ExecStart": "/usr/bin/featstore serve --config /etc/featstore/featstore.json"}


def settings(text):
    """key -> value of every Key=Value line (the last one wins, as in systemd)."""
    return dict(m.groups() for m in re.finditer(r"^(\w+)=(.*)$", text, re.M))


def verify(unit_text, featstore, work, errors):
    copy = os.path.join(work, "featstore.service")
    with open(copy, "w") as f:
        f.write(unit_text.replace("ExecStart=/usr/bin/featstore ", f"ExecStart={featstore} ", 1))
    r = subprocess.run(["systemd-analyze", "verify", copy], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True, timeout=120)
    print(f"systemd-analyze verify: exit {r.returncode}, {len(r.stdout.splitlines())} line(s)")
    if r.returncode != 0 or r.stdout.strip():
        errors.append(f"systemd-analyze verify {copy} exited {r.returncode}:\n{r.stdout}")


def check_settings(unit, errors):
    for key, value in WANT.items():
        if key not in unit:
            errors.append(f"the unit sets no {key}=")
        elif value is not None and unit[key] != value:
            errors.append(f"the unit has {key}={unit[key]}, want {value}")


def check_config(unit, featstore, work, errors):
    cfg = json.load(open(CONFIG))
    sock = cfg.get("socket", "")
    if os.path.dirname(sock) != "/run/" + unit.get("RuntimeDirectory", "?"):
        errors.append(f"the config's socket {sock} is not in the unit's RuntimeDirectory /run/"
                      f"{unit.get('RuntimeDirectory')}")
    dataset = fs_serve.import_cora(featstore, os.path.join(work, "cora"))
    try:
        proc, ready = fs_serve.start(featstore, dataset, os.path.join(work, "fs.sock"),
                                     ["--config", CONFIG, "--plan-dir", work])
        print(f"serve --config {CONFIG}: {ready}")
        if fs_serve.stop(proc) != 0:
            errors.append("featstore serve did not exit 0 on SIGTERM")
    except RuntimeError as e:
        errors.append(f"featstore serve --config {CONFIG}: {e}")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--featstore", required=True)
    p.add_argument("--work", required=True, help="scratch directory (emptied first)")
    args = p.parse_args()
    if not shutil.which("systemd-analyze"):
        print("SKIP: systemd-analyze is not installed (Debian: apt-get install systemd)")
        return SKIP
    work = os.path.abspath(args.work)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    text = open(UNIT).read()
    unit, errors = settings(text), []
    verify(text, os.path.abspath(args.featstore), work, errors)
    check_settings(unit, errors)
    check_config(unit, os.path.abspath(args.featstore), work, errors)
    for e in errors:
        print("FAIL:", e)
    if not errors:
        shutil.rmtree(work, ignore_errors=True)
        print("test_service: OK")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
