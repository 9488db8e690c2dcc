#!/usr/bin/python3
"""pytest_collect.py — the Python tests stay collectable by pytest
(ctest: test_pytest_collect; tests/conftest.py says how pytest finds the
build).

    /usr/bin/python3 tests/python/pytest_collect.py --tests tests

Runs ``python3 -m pytest --collect-only -q TESTS`` and fails when pytest
reports a collection error, or when a module of WANT (the unittest suites
this Python has the modules for) yields no test. Exit status: 0 pass, 1
fail, 77 (ctest's skip) without pytest (Debian: python3-pytest).
"""
import argparse
import importlib.util
import re
import subprocess
import sys

SKIP = 77
# Suites that need numpy (and torch) only: collected wherever those are installed.
WANT = {"test_python_stream.py": ("numpy",), "test_python_stream_kinds.py": ("numpy",),
        "test_local_guards.py": ("numpy",), "test_addr_serve.py": (), "test_py_dataset.py": ("numpy", "xxhash"),
        "test_python.py": ("numpy", "torch"), "test_python_safety.py": ("numpy", "torch")}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--tests", required=True, help="the tests/ directory")
    args = p.parse_args()
    if importlib.util.find_spec("pytest") is None:
        print(f"SKIP: {sys.executable} has no pytest (apt-get install python3-pytest)")
        return SKIP
    r = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", args.tests],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=240)
    print(r.stdout[-3000:])
    failures = []
    if r.returncode != 0 or re.search(r"\berrors?\b", r.stdout.splitlines()[-1] if r.stdout else "error"):
        failures.append(f"pytest --collect-only exited {r.returncode}")
    for module, needs in WANT.items():
        if all(importlib.util.find_spec(m) for m in needs) and f"{module}::" not in r.stdout:
            failures.append(f"{module}: no test collected")
    for f in failures:
        print("FAIL: " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
