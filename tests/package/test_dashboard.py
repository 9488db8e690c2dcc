#!/usr/bin/python3
"""test_dashboard.py — the Grafana dashboard and the compose stack agree with
what featstore exports (ctest test_dashboard, ~1 s).

Every PromQL expression in docker/grafana/dashboards/featstore.json (panels,
panels nested in rows, template-variable queries, annotations) is reduced to
the metric names it reads; a live `featstore serve` on Cora, with a simulated
GPU placement and trainers over unix:// and grpc:// (one still connected), is
scraped, and so is a shard server of Cora's partitioning (the Shards row), and
each name must be a family featstore exports, with samples. The
scrape must also pass tests/lib/check_exposition.py. Then the files must agree:
prometheus.yml scrapes the compose service and port given to `serve
--metrics`, compose mounts prometheus.yml and the Grafana directories where
the provisioning files and the dashboard expect them, and every data source
the dashboard names is the provisioned one.

    test_dashboard.py --featstore BIN --trainer BIN --docker DIR [--dashboard JSON]

Needs Debian's python3-prometheus-client and python3-yaml (else exit 77).
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))  # tests/lib: fs_serve
import fs_serve  # noqa: E402

SKIP = 77
HERE = os.path.dirname(os.path.abspath(__file__))
ARGS = None
SCRAPE = {}  # text, families: {name: family}
yaml = parser = check_exposition = None

# Series Prometheus makes itself for each scrape target, not featstore's.
SYNTHETIC = {"up", "scrape_duration_seconds", "scrape_samples_scraped", "scrape_samples_post_metric_relabeling",
             "scrape_series_added"}
# Families featstore declares but fills only when the event happens (a dataset
# file changed while serving): declared is enough for these.
EVENTUAL = {"featstore_dataset_file_changes_total"}
# Words of PromQL that look like identifiers but name no metric.
KEYWORDS = {"and", "or", "unless", "by", "without", "on", "ignoring", "group_left", "group_right", "offset", "bool",
            "inf", "nan", "atan2"}
GROUPING = re.compile(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^()]*\)")
STRING = re.compile(r'"(?:\\.|[^"\\])*"|\'(?:\\.|[^\'\\])*\'|`[^`]*`')
IDENT = re.compile(r"(?<![\w.:$])([a-zA-Z_:][a-zA-Z0-9_:]*)(\s*\()?")
GRAFANA_FN = re.compile(r"^\s*(label_values|query_result|metrics|label_names)\s*\((.*)\)\s*$", re.S)


def grafana_query(expr):
    """The PromQL inside a Grafana variable query: label_values(SELECTOR, label)
    reads SELECTOR (label_values(label) reads none), query_result(Q) reads Q;
    metrics(regex) and label_names() read no series by name."""
    m = GRAFANA_FN.match(expr)
    if not m:
        return expr
    fn, inner = m.groups()
    if fn == "query_result":
        return inner
    if fn == "label_values" and "," in inner:
        return inner.rsplit(",", 1)[0]
    return ""


def metric_names(expr):
    """The metric names a PromQL expression reads, histogram suffixes kept
    (see family_of). Strings, label matchers {...}, ranges [...], Grafana
    variables and by()/without()/on()/ignoring()/group_*() label lists are
    removed first; what is left that is an identifier, not a keyword and not
    called as a function or aggregation, is a metric name."""
    e = STRING.sub('""', grafana_query(expr))
    e = re.sub(r"\{[^{}]*\}", " ", e)
    e = re.sub(r"\[[^\[\]]*\]", " ", e)
    e = re.sub(r"\$\{[^}]*\}|\$\w+", " ", e)
    e = GROUPING.sub(" ", e)
    names = set()
    for m in IDENT.finditer(e):
        name, call = m.groups()
        if not call and name not in KEYWORDS:
            names.add(name)
    return names


def walk_panels(panels):
    """Every panel, descending into rows (collapsed rows keep theirs nested)."""
    for p in panels or []:
        yield p
        yield from walk_panels(p.get("panels"))


def dashboard_exprs(dash):
    """(where, expr) for each query of the dashboard: panel targets, template
    variables (a string or {"query": ...}) and annotations."""
    out = []
    for p in walk_panels(dash.get("panels")):
        for t in p.get("targets") or []:
            if t.get("expr"):
                out.append((f"panel {p.get('title')!r} {t.get('refId')}", t["expr"]))
    for v in dash.get("templating", {}).get("list", []):
        q = v.get("query")
        q = q.get("query") if isinstance(q, dict) else q
        if v.get("type") == "query" and q:
            out.append((f"variable ${v.get('name')}", q))
    for a in dash.get("annotations", {}).get("list", []):
        if a.get("expr"):
            out.append((f"annotation {a.get('name')!r}", a["expr"]))
    return out


def family_of(name, families):
    """The exported family a sample name belongs to: histogram and summary
    series drop _bucket/_sum/_count; prometheus_client names counter families
    without _total, so that is dropped too. None when featstore has none."""
    for suffix in ("", "_bucket", "_sum", "_count", "_total"):
        if suffix and not name.endswith(suffix):
            continue
        base = name[:len(name) - len(suffix)] if suffix else name
        fam = families.get(base)
        if fam is None:
            continue
        if suffix in ("_bucket", "_sum", "_count") and fam.type not in ("histogram", "summary"):
            continue
        if suffix == "_total" and fam.type != "counter":
            continue
        return fam
    return None


def load_dashboard():
    with open(ARGS.dashboard) as f:
        return json.load(f)


def load_yaml(*parts):
    with open(os.path.join(ARGS.docker, *parts)) as f:
        return yaml.safe_load(f)


def http_get(port, path):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as r:
        return r.read().decode()


def run_trainers(ready, tmp):
    """Batches over both transports as gpu:1 of the plan (so the placement
    series have figures), and a unix:// trainer left connected (--hold) for
    the per-version client gauge. Returns the held process."""
    unix = "unix://" + ready["unix"]
    common = ["--batches", "5", "--batch", "64", "--fanouts", "5,3"]
    for uri, extra in ((unix, ["--device", "gpu:1"]), ("grpc://" + ready["grpc"], [])):
        subprocess.run([ARGS.trainer, uri] + common + extra, check=True, stdout=subprocess.DEVNULL, timeout=60)
    held = subprocess.Popen([ARGS.trainer, unix, "--hold"] + common, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            preexec_fn=fs_serve.die_with_parent)
    for line in held.stdout:  # its summary line, then HOLD once the batch is kept
        if line.strip() == b"HOLD":
            return held
    held.wait()
    raise RuntimeError(f"the held trainer exited ({held.returncode}) before HOLD")


def scrape(port):
    """/metrics once the trainers' reports are in (they are asynchronous)."""
    deadline = time.monotonic() + 10
    while True:
        text = http_get(port, "/metrics")
        unix = re.search(r'^featstore_requests_total\{method="SampleGather",transport="unix"\} (\d+)$', text, re.M)
        if unix and int(unix.group(1)) >= 11 and re.search(r"^featstore_local_clients_by_version\{", text, re.M):
            return text  # 5 batches, then 5 and the one the held trainer keeps
        if time.monotonic() > deadline:
            return text  # the asserts say what is missing
        time.sleep(0.05)


def setUpModule():
    tmp = tempfile.mkdtemp(prefix="featstore-dashboard-")
    SCRAPE["tmp"] = tmp
    data = fs_serve.import_cora(ARGS.featstore, os.path.join(tmp, "cora"))
    proc, ready = fs_serve.start(ARGS.featstore, data, os.path.join(tmp, "s.sock"),
                                 extra=["--topology", "nvlink-pairs", "--gpu-budget", "0.2"],
                                 stderr=subprocess.DEVNULL)
    try:
        held = run_trainers(ready, tmp)
        SCRAPE["text"] = scrape(int(ready["metrics"]))
        held.stdin.close()
        held.wait(timeout=30)
        held.stdout.close()
    finally:
        SCRAPE["status"] = fs_serve.stop(proc)
    shard_text, SCRAPE["shard_status"] = fs_serve.shard_scrape(ARGS.featstore, data, tmp)  # the Shards row
    SCRAPE["text"] += shard_text
    SCRAPE["families"] = {f.name: f for f in parser.text_string_to_metric_families(SCRAPE["text"])}


def tearDownModule():
    shutil.rmtree(SCRAPE.get("tmp", ""), ignore_errors=True)


class Tokenizer(unittest.TestCase):
    """metric_names on expressions whose answer is known."""

    def test_known_expressions(self):
        cases = {
            'histogram_quantile(0.99, sum by (le, method) (rate(a_bucket{x="y",le!="1"}[$__rate_interval])))':
                {"a_bucket"},
            'sum(rate(a_total{m=~"b|c"}[5m])) by (m) / on(m) group_left(z) sum without (q) (b_total offset 1h)':
                {"a_total", "b_total"},
            'up{job="featstore"} == bool 1 and ignoring(x) c': {"up", "c"},
            "max_over_time(d[1h:5m]) * 1e3 + e @ start()": {"d", "e"},
            'label_values(featstore_requests_total{instance=~"$instance"}, method)': {"featstore_requests_total"},
            "label_values(instance)": set(),
            'count(f{a="sum(g)"}) > 0.5 unless h': {"f", "h"},
        }
        for expr, want in cases.items():
            self.assertEqual(metric_names(expr), want, expr)


class Dashboard(unittest.TestCase):
    def test_the_server_started_and_stopped_cleanly(self):
        self.assertEqual((SCRAPE["status"], SCRAPE["shard_status"]), (0, 0))

    def test_the_scrape_passes_the_exposition_check(self):
        self.assertEqual(check_exposition.check(SCRAPE["text"]), [])

    def test_every_metric_a_query_names_is_exported(self):
        exprs = dashboard_exprs(load_dashboard())
        self.assertGreater(len(exprs), 20, "the dashboard's queries were not found")
        families, missing, empty, seen = SCRAPE["families"], [], [], set()
        for where, expr in exprs:
            names = metric_names(expr)
            if not names:
                missing.append(f"{where}: no metric name found in {expr!r}")
            for name in sorted(names - SYNTHETIC):
                seen.add(name)
                fam = family_of(name, families)
                if fam is None:
                    missing.append(f"{where}: {name} is not exported by featstore ({expr})")
                elif not fam.samples and name not in EVENTUAL:
                    empty.append(f"{where}: {name} is declared but has no samples")
        print(f"test_dashboard: {len(exprs)} queries name {len(seen)} metrics: {', '.join(sorted(seen))}",
              file=sys.stderr)
        self.assertEqual(missing + empty, [], "\n".join(missing + empty))

    def test_panels_are_well_formed(self):
        dash = load_dashboard()
        ids = [p["id"] for p in walk_panels(dash["panels"])]
        self.assertEqual(len(ids), len(set(ids)), "panel ids repeat")
        for p in walk_panels(dash["panels"]):
            if p["type"] != "row":
                self.assertTrue(p.get("targets"), f"panel {p['title']!r} has no query")
            refs = [t["refId"] for t in p.get("targets", [])]
            self.assertEqual(len(refs), len(set(refs)), f"panel {p['title']!r}: refIds repeat")


class Compose(unittest.TestCase):
    def setUp(self):
        self.compose = load_yaml("compose.yaml")
        self.services = self.compose["services"]

    def mounts(self, service):
        """{target: absolute source} of a service's bind mounts (relative
        sources are relative to docker/, where compose.yaml is)."""
        out = {}
        for v in self.services[service].get("volumes", []):
            src, target = v.split(":")[:2]
            if src.startswith((".", "/")):
                out[target] = os.path.normpath(os.path.join(ARGS.docker, src))
        return out

    def metrics_port(self, service):
        command = self.services[service]["command"]
        command = " ".join(command) if isinstance(command, list) else command
        found = re.findall(r"--metrics[ =](\S+):(\d+)", command)
        self.assertEqual(len(found), 1, f"one --metrics HOST:PORT in {service}'s command: {command}")
        host, port = found[0]
        self.assertNotIn(host, ("127.0.0.1", "localhost", "::1"), "Prometheus in another container cannot reach it")
        return int(port)

    def test_prometheus_scrapes_the_metrics_port(self):
        prom = load_yaml("prometheus", "prometheus.yml")
        jobs = {j["job_name"]: j for j in prom["scrape_configs"]}
        self.assertIn("featstore", jobs)
        self.assertIn(jobs["featstore"].get("metrics_path", "/metrics"), ("/metrics",))
        targets = [t for sc in jobs["featstore"]["static_configs"] for t in sc["targets"]]
        self.assertTrue(targets)
        for t in targets:
            host, port = t.rsplit(":", 1)
            self.assertIn(host, self.services, f"scrape target {t}: no compose service {host}")
            self.assertEqual(int(port), self.metrics_port(host), f"scrape target {t} against serve --metrics")
        self.assertEqual(self.mounts("prometheus").get("/etc/prometheus/prometheus.yml"),
                         os.path.join(ARGS.docker, "prometheus", "prometheus.yml"))

    def test_grafana_provisioning_finds_the_dashboard_and_data_source(self):
        mounts = self.mounts("grafana")
        self.assertEqual(mounts.get("/etc/grafana/provisioning"), os.path.join(ARGS.docker, "grafana", "provisioning"))
        providers = load_yaml("grafana", "provisioning", "dashboards", "featstore.yml")["providers"]
        paths = [p["options"]["path"] for p in providers]
        self.assertEqual(len(paths), 1)
        source = mounts.get(paths[0])
        self.assertIsNotNone(source, f"compose mounts nothing on the provider's path {paths[0]}")
        self.assertTrue(os.path.samefile(os.path.join(source, "featstore.json"),
                                         os.path.join(ARGS.docker, "grafana", "dashboards", "featstore.json")))
        home = self.services["grafana"].get("environment", {}).get("GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH")
        self.assertEqual(home, os.path.join(paths[0], "featstore.json"))
        sources = load_yaml("grafana", "provisioning", "datasources", "prometheus.yml")["datasources"]
        uids = {s["uid"] for s in sources if s["type"] == "prometheus"}
        url = [s["url"] for s in sources if s["type"] == "prometheus"][0]
        self.assertRegex(url, r"^http://prometheus:9090/?$")
        self.assertIn("prometheus", self.services)
        dash = load_dashboard()
        used = {p["datasource"]["uid"] for p in walk_panels(dash["panels"]) if p.get("datasource")}
        used |= {t["datasource"]["uid"] for p in walk_panels(dash["panels"]) for t in p.get("targets", [])
                 if t.get("datasource")}
        used |= {v["datasource"]["uid"] for v in dash["templating"]["list"] if v.get("datasource")}
        self.assertEqual(used, uids, "the dashboard's data sources against the provisioned ones")


def main():
    global ARGS, yaml, parser, check_exposition
    ap = argparse.ArgumentParser()
    ap.add_argument("--featstore", required=True)
    ap.add_argument("--trainer", required=True)
    ap.add_argument("--docker", required=True, help="the repository's docker/ directory")
    ap.add_argument("--dashboard", help="the dashboard JSON (default: DOCKER/grafana/dashboards/featstore.json)")
    ARGS, rest = ap.parse_known_args()
    ARGS.docker = os.path.abspath(ARGS.docker)
    ARGS.dashboard = ARGS.dashboard or os.path.join(ARGS.docker, "grafana", "dashboards", "featstore.json")
    try:
        import yaml as y
        from prometheus_client import parser as p
        import check_exposition as c
    except ImportError as e:
        print(f"test_dashboard: skipped: {e} (Debian: python3-yaml, python3-prometheus-client)")
        sys.exit(SKIP)
    yaml, parser, check_exposition = y, p, c
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)


if __name__ == "__main__":
    main()
else:  # collected by pytest (tests/conftest.py): the build the environment names
    _root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    ARGS = fs_serve.pytest_args(("yaml", "prometheus_client"), docker=os.path.join(_root, "docker"),
                                trainer=os.path.join(os.environ["FEATSTORE_BUILD"], "examples", "featstore-trainer"))
    ARGS.dashboard = os.path.join(ARGS.docker, "grafana", "dashboards", "featstore.json")
    import yaml
    from prometheus_client import parser
    import check_exposition
