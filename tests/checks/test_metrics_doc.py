#!/usr/bin/python3
"""test_metrics_doc.py — docs/metrics.md and a live server's /metrics name
the same families, both ways, with the same types.

Two `featstore serve` processes on Cora: one plain, one serving a placement
on 4 simulated GPUs (FEATSTORE_SIM_GPUS, `--topology nvlink-pairs`), so the
families exported only with a placement appear. The doc's families are the
first cells of its tables (| `featstore_…` | type | …); a row that says "with
a placement" is one of those. The plain server must export exactly the
others, the placed one all of them, each with the type the doc gives. Rows
that say "a shard server" are a shard server's (`featstore serve PARTS
--parts`, Cora in 2 parts, outside a cluster), which must export exactly
those but the rows that say "in a cluster on etcd".

    /usr/bin/python3 tests/checks/test_metrics_doc.py --featstore BIN --doc docs/metrics.md
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))  # tests/lib: fs_serve
import fs_serve  # noqa: E402

ARGS = None
SCRAPES = {}  # "plain" / "placed": {family: type}
ROW = re.compile(r"^\| `(featstore_\w+)` \| (\w+) \|(.*)$", re.M)


def documented(shard=False, doc=None):
    """{family: (type, with a placement?)} from the doc's tables: a whole
    server's, or (shard) a shard server's; a cluster trainer's are
    trainer_documented's."""
    with open(doc or ARGS.doc) as f:
        text = f.read()
    trainers = set(trainer_documented(doc or ARGS.doc))
    return {name: (kind, "with a placement" in rest) for name, kind, rest in ROW.findall(text)
            if ("a shard server" in rest) == shard and name not in trainers}


def trainer_documented(doc):
    """{family: type} a cluster trainer's fs_stats adds (test_pyg_cluster
    compares them with a trainer's)."""
    return fs_serve.trainer_families(doc)


def exported(text):
    """{family: type} from the # TYPE lines of an exposition."""
    return dict(re.findall(r"^# TYPE (featstore_\w+) (\w+)$", text, re.M))


def setUpModule():
    tmp = tempfile.mkdtemp(prefix="featstore-metrics-doc-")
    SCRAPES["tmp"] = tmp
    cora = fs_serve.import_cora(ARGS.featstore, os.path.join(tmp, "cora"))
    servers = {"plain": ([], os.environ),
               "placed": (["--topology", "nvlink-pairs", "--gpu-budget", "0.2"],
                          dict(os.environ, FEATSTORE_SIM_GPUS="4"))}
    for name, (extra, env) in servers.items():
        proc, ready = fs_serve.start(ARGS.featstore, cora, os.path.join(tmp, name + ".sock"), extra=extra, env=env,
                                     stderr=subprocess.DEVNULL)
        try:
            SCRAPES[name] = exported(fs_serve.metrics(ready))
        finally:
            SCRAPES[name + "_status"] = fs_serve.stop(proc)
    text, SCRAPES["shard_status"] = fs_serve.shard_scrape(ARGS.featstore, cora, tmp)
    SCRAPES["shard"] = exported(text)


def tearDownModule():
    shutil.rmtree(SCRAPES.get("tmp", ""), ignore_errors=True)


class MetricsDoc(unittest.TestCase):
    def test_the_servers_ran_and_stopped_cleanly(self):
        self.assertEqual((SCRAPES["plain_status"], SCRAPES["placed_status"], SCRAPES["shard_status"]), (0, 0, 0))

    def test_a_shard_server_exports_exactly_the_families_documented_for_it(self):
        with open(ARGS.doc) as f:
            on_etcd = {name for name, _, rest in ROW.findall(f.read()) if "in a cluster on etcd" in rest}
        self.compare(SCRAPES["shard"], {name: kind for name, (kind, _) in documented(shard=True).items()
                                        if name not in on_etcd})

    def test_the_doc_lists_families(self):
        self.assertGreater(len(documented()), 25, f"no family tables found in {ARGS.doc}")

    def test_a_plain_server_exports_exactly_the_families_documented_without_a_placement(self):
        want = {name: kind for name, (kind, placed) in documented().items() if not placed}
        self.compare(SCRAPES["plain"], want)

    def test_a_placed_server_exports_every_documented_family(self):
        want = {name: kind for name, (kind, _) in documented().items()}
        self.compare(SCRAPES["placed"], want)

    def compare(self, got, want):
        self.assertEqual(sorted(set(got) - set(want)), [], "exported but not in docs/metrics.md")
        self.assertEqual(sorted(set(want) - set(got)), [], "in docs/metrics.md but not exported")
        wrong = {n: (want[n], got[n]) for n in want if got[n] != want[n]}
        self.assertEqual(wrong, {}, "(documented type, exported type)")


def main():
    global ARGS
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--featstore", required=True)
    p.add_argument("--doc", required=True)
    ARGS, rest = p.parse_known_args()
    prog = unittest.main(argv=[sys.argv[0]] + rest, exit=False, verbosity=2)
    sys.exit(0 if prog.result.wasSuccessful() else 1)


if __name__ == "__main__":
    main()
else:  # collected by pytest (tests/conftest.py): the build the environment names
    ARGS = fs_serve.pytest_args((), doc=os.path.join(os.path.dirname(fs_serve.TESTS_DIR), "docs", "metrics.md"))
