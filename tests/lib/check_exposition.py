#!/usr/bin/python3
"""check_exposition.py — a strict check of a Prometheus text exposition (what
`featstore serve` answers on /metrics), in place of `promtool check metrics`
so the tests need no Prometheus server package.

    check_exposition.py FILE        (or - for stdin): exit 0, or 1 naming each fault

prometheus_client's parser (Debian's python3-prometheus-client) reads the
text and rejects malformed sample lines; it is lenient about the rest, so on
top of it each family must come with # HELP and # TYPE before its samples,
once; names must match [a-zA-Z_:][a-zA-Z0-9_:]* (labels without the colon);
sample names must belong to their family (counters end in _total); no series
may repeat; and each histogram series must have cumulative buckets in
increasing `le` order ending at +Inf, with +Inf equal to _count and a _sum.
A missing module is an error, not a skip: the check is what tests rely on.
"""
import math
import re
import sys

from prometheus_client.parser import text_string_to_metric_families

METRIC_NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*\Z")
LABEL_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*\Z")
TYPES = {"counter", "gauge", "histogram", "summary", "untyped"}
SUFFIXES = {"counter": ("_total",), "gauge": ("",), "untyped": ("",),
            "histogram": ("_bucket", "_sum", "_count"), "summary": ("", "_sum", "_count")}


def check_comments(text, faults):
    """HELP and TYPE: once per family, valid names and types, before the
    family's first sample. Returns {family: type}."""
    helps, types, seen_samples = set(), {}, set()
    for n, line in enumerate(text.splitlines(), 1):
        if line.startswith("# HELP ") or line.startswith("# TYPE "):
            parts = line.split(None, 3)
            if len(parts) < 4:
                faults.append(f"line {n}: {parts[1]} without a name and text: {line!r}")
                continue
            kind, name, rest = parts[1], parts[2], parts[3]
            if not METRIC_NAME.match(name):
                faults.append(f"line {n}: bad metric name {name!r}")
            table = helps if kind == "HELP" else types
            if name in table:
                faults.append(f"line {n}: a second # {kind} for {name}")
            if kind == "HELP":
                helps.add(name)
            else:
                if rest not in TYPES:
                    faults.append(f"line {n}: unknown type {rest!r} for {name}")
                if name in seen_samples:
                    faults.append(f"line {n}: # TYPE {name} after its samples")
                types[name] = rest
        elif line and not line.startswith("#"):
            seen_samples.add(family_of(line.split("{")[0].split(" ")[0], types))
    for name in types.keys() - helps:
        faults.append(f"{name}: # TYPE without # HELP")
    for name in helps - types.keys():
        faults.append(f"{name}: # HELP without # TYPE")
    return types


def family_of(sample, types):
    """The declared family a sample name belongs to (itself when none)."""
    for fam, kind in types.items():
        if any(sample == fam + s for s in SUFFIXES.get(kind, ("",))):
            return fam
    return sample


def check_samples(text, types, faults):
    """Every sample line belongs to a declared family and no series repeats."""
    series = set()
    for n, line in enumerate(text.splitlines(), 1):
        if not line or line.startswith("#"):
            continue
        name = line.split("{")[0].split(" ")[0]
        if not METRIC_NAME.match(name):
            faults.append(f"line {n}: bad metric name {name!r}")
        fam = family_of(name, types)
        if fam not in types:
            faults.append(f"line {n}: sample {name} of no declared family (no # TYPE; a counter's must end in _total)")
        key = line.rsplit(" ", 1)[0]
        if key in series:
            faults.append(f"line {n}: series repeated: {key}")
        series.add(key)


def check_histogram(fam, faults):
    """Per label set: cumulative buckets by increasing le, +Inf last and equal
    to _count, and a _sum."""
    groups = {}
    for s in fam.samples:
        labels = tuple(sorted((k, v) for k, v in s.labels.items() if k != "le"))
        g = groups.setdefault(labels, {"buckets": [], "count": None, "sum": None})
        if s.name.endswith("_bucket"):
            g["buckets"].append((float(s.labels["le"]), s.value))
        elif s.name.endswith("_count"):
            g["count"] = s.value
        elif s.name.endswith("_sum"):
            g["sum"] = s.value
    for labels, g in groups.items():
        where = f"{fam.name}{{{','.join(f'{k}={v!r}' for k, v in labels)}}}"
        les = [le for le, _ in g["buckets"]]
        if les != sorted(les) or len(set(les)) != len(les):
            faults.append(f"{where}: buckets not in increasing le order: {les}")
        counts = [c for _, c in g["buckets"]]
        if any(b < a for a, b in zip(counts, counts[1:])):
            faults.append(f"{where}: buckets not cumulative: {counts}")
        if not les or not math.isinf(les[-1]):
            faults.append(f"{where}: no le=\"+Inf\" bucket last")
        elif g["count"] is None or counts[-1] != g["count"]:
            faults.append(f"{where}: +Inf bucket {counts[-1]} != _count {g['count']}")
        if g["sum"] is None:
            faults.append(f"{where}: no _sum")


def check(text):
    """All faults found in an exposition text (empty when it is good)."""
    faults = []
    try:
        families = list(text_string_to_metric_families(text))
    except Exception as e:  # the parser raises ValueError and friends on a bad line
        return [f"prometheus_client cannot parse it: {type(e).__name__}: {e}"]
    if not families:
        faults.append("no metric families at all")
    if not text.endswith("\n"):
        faults.append("the text does not end with a line feed")
    types = check_comments(text, faults)
    check_samples(text, types, faults)
    for fam in families:
        for s in fam.samples:
            for label in s.labels:
                if not LABEL_NAME.match(label) or label.startswith("__"):
                    faults.append(f"{s.name}: bad label name {label!r}")
        if fam.type == "histogram":
            check_histogram(fam, faults)
    return faults


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: check_exposition.py FILE|-")
    text = sys.stdin.read() if sys.argv[1] == "-" else open(sys.argv[1]).read()
    faults = check(text)
    for f in faults:
        print(f"check_exposition: {f}", file=sys.stderr)
    sys.exit(1 if faults else 0)


if __name__ == "__main__":
    main()
