#!/usr/bin/python3
"""test_deploy_manifests.py — docker/k8s and docker/cluster checked without a
cluster or a Docker engine (ctest test_deploy_manifests, ~2 s).

Every YAML file in docker/k8s and docker/cluster is parsed. Each Kubernetes
object must have what its kind requires (apiVersion for the kind,
metadata.name, the labels every file shares), a workload's selector must
match its pod template's labels, a StatefulSet's serviceName must be a
headless Service (clusterIP: None) that selects its pods, a Service's named
target ports must be its pods' ports, probes must name a port the container
has, volume mounts a volume the pod has, claims a PersistentVolumeClaim of
these files, and containers only fields Kubernetes knows. Every `featstore
serve` command line (a StatefulSet's container, with $(VAR) expanded from its
env as Kubernetes does; a compose shard's command) must name only options
`featstore serve` lists in its usage, and is run through the built
featstore's own option checks for each pod's host name (FS_SHARD_HOSTNAME =
NAME-0 ... NAME-(replicas-1)) with the root replaced by a missing one: it
must get past every option check and stop only at that root (exit 1).
`--parts auto` needs --shards equal to the StatefulSet's replicas (or to the
compose shards, numbered 0..COUNT-1 once each), a partition step writing the
root served with at least COUNT parts, and both files agreeing on the
cluster's name, the gRPC port and the parts. The compose file: no top-level
`name:` (Compose 1.29), health checks, restart policies, the shards waiting
for etcd's health and the partition's success, each shard listening on its
service name (the address it registers) with its health check dialing it.

The checker first finds faults planted in copies (an option the CLI does not
know, a serviceName without its Service, a selector its pods do not match,
--shards unequal to replicas, a duplicated compose shard, ...), so it can
fail. Then, where the tools are here (each part skipped, saying so, where
not): `kubectl apply --dry-run=client --validate=false -f FILE -o name` for
each file (it needs an API server's discovery: offline it is skipped), else
offline `kubectl set env --local` (each object decoded into Kubernetes' typed
structs: a wrong type, kind or apiVersion fails; planted too) and `kubectl
kustomize docker/k8s` (the kustomization renders exactly these objects); and
`docker-compose config -q` on the compose file.

    test_deploy_manifests.py --source DIR --featstore BIN [--kubectl BIN] [--docker-compose BIN]

Needs Debian's python3-yaml (else exit 77).
"""
import argparse
import copy
import glob
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "checks"))  # planted.py
from planted import missed, report  # noqa: E402

SKIP = 77
try:
    import yaml
except ImportError:
    print("SKIPPED: no python3-yaml (apt-get install python3-yaml)")
    sys.exit(SKIP)

K8S_DIR, COMPOSE_DIR = "docker/k8s", "docker/cluster"
KINDS = {"Service": "v1", "ConfigMap": "v1", "PersistentVolumeClaim": "v1", "Secret": "v1",
         "StatefulSet": "apps/v1", "Deployment": "apps/v1", "Job": "batch/v1"}
WORKLOADS = {"StatefulSet", "Deployment", "Job"}
LABELS = {"app.kubernetes.io/name": "featstore", "app.kubernetes.io/part-of": "featstore-cluster"}
COMPONENT = "app.kubernetes.io/component"
CONTAINER_FIELDS = {"name", "image", "imagePullPolicy", "command", "args", "env", "envFrom", "ports", "resources",
                    "volumeMounts", "livenessProbe", "readinessProbe", "startupProbe", "securityContext",
                    "workingDir", "lifecycle", "terminationMessagePath", "terminationMessagePolicy", "stdin", "tty"}
PROBE_ACTIONS = ("tcpSocket", "httpGet", "grpc", "exec")
DNS1123 = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
ENV_REF = re.compile(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)")
FIELD_PLACEHOLDER = {"status.podIP": "10.0.0.7", "metadata.name": "pod-0", "metadata.namespace": "default"}


# ---- featstore serve's command line ---------------------------------------------------------


class Cli:
    """What the built featstore says about a serve command line."""

    def __init__(self, featstore, work):
        self.bin, self.work = featstore, work
        usage = subprocess.run([featstore, "serve"], capture_output=True, text=True, timeout=30)
        self.options = set(re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)", usage.stderr))
        if "--parts" not in self.options or "--listen" not in self.options:
            raise SystemExit(f"FAIL: `{featstore} serve` printed no usage with --parts and --listen: {usage.stderr}")
        self.cache = {}

    def check(self, argv, hostname):
        """None if featstore takes argv ("serve DATASET ...") up to opening the
        (missing) root, else what it said."""
        key = (tuple(argv), hostname)
        if key not in self.cache:
            absent = os.path.join(self.work, "absent-root")
            env = dict(os.environ, FS_SHARD_HOSTNAME=hostname or "")
            run = subprocess.run([self.bin, argv[0], absent] + argv[2:], capture_output=True, text=True, env=env,
                                 timeout=30)
            said = " / ".join(line for line in run.stderr.splitlines() if "warning:" not in line)
            ok = run.returncode == 1 and absent in said
            self.cache[key] = None if ok else f"exit {run.returncode}: {said.strip()}"
        return self.cache[key]


def option_value(argv, name):
    """The value after --name (or --name=value), else None."""
    for i, a in enumerate(argv):
        if a == name and i + 1 < len(argv):
            return argv[i + 1]
        if a.startswith(name + "="):
            return a.split("=", 1)[1]
    return None


def serve_faults(where, argv, cli, hostnames):
    """An argv ["serve", ROOT, ...] against the CLI: options by name, then the CLI's own checks."""
    if not argv or argv[0] != "serve":
        return [f"{where}: runs {argv[:1]}, not featstore serve"]
    if len(argv) < 2 or argv[1].startswith("-"):
        return [f"{where}: the partition root must come first after serve, got {argv[1:2]}"]
    faults = [f"{where}: {a.split('=')[0]} is not an option `featstore serve` takes (its usage has no such "
              "option: featstore serve, docs/cli.md)" for a in argv[2:] if a.startswith("--")
              and a.split("=")[0] not in cli.options]
    if faults:
        return faults
    for h in hostnames:
        said = cli.check(argv, h)
        if said:
            faults.append(f"{where}: featstore refuses the command line{f' on host {h}' if h else ''}: {said}")
            break
    return faults


def cluster_of(argv):
    """(host, port, name) of --cluster etcd://HOST:PORT/NAME, or None."""
    m = re.match(r"^etcd://([^:/]+):(\d+)/(.+)$", option_value(argv, "--cluster") or "")
    return (m.group(1), int(m.group(2)), m.group(3)) if m else None


def partition_steps(script, env):
    """The `featstore partition SRC --parts V --out DIR` lines of a shell script, $VAR and $$VAR expanded
    from env: [(V, DIR)]."""
    out = []
    for line in script.splitlines():
        words = line.strip().split()
        if words[:2] != ["featstore", "partition"]:
            continue
        expanded = []
        for w in words:
            expanded += shlex.split(re.sub(r"\$\$?\{?(\w+)\}?", lambda m: env.get(m.group(1), m.group(0)), w))
        parts, out_dir = option_value(expanded, "--parts"), option_value(expanded, "--out")
        out.append((int(parts) if parts and parts.isdigit() else None, out_dir))
    return out


# ---- Kubernetes ---------------------------------------------------------------------------


def pod_of(obj):
    return ((obj.get("spec") or {}).get("template") or {}).get("spec") or {}


def template_labels(obj):
    return (((obj.get("spec") or {}).get("template") or {}).get("metadata") or {}).get("labels") or {}


def selects(selector, labels):
    return bool(selector) and all(labels.get(k) == v for k, v in selector.items())


def container_argv(c):
    """A featstore container's argv after the featstore entrypoint, or None for another program."""
    cmd, args = c.get("command"), c.get("args") or []
    if cmd is None:
        return list(args) if str(c.get("image", "")).split(":")[0].endswith("featstore") else None
    if cmd and os.path.basename(str(cmd[0])) == "featstore":
        return list(cmd[1:]) + list(args)
    return None


def expand_env(argv, c, where, faults):
    """$(VAR) from the container's env, as Kubernetes expands args; an undefined one is a fault."""
    env = {}
    for e in c.get("env") or []:
        if "value" in e:
            env[e["name"]] = str(e["value"])
        elif (e.get("valueFrom") or {}).get("fieldRef"):
            env[e["name"]] = FIELD_PLACEHOLDER.get(e["valueFrom"]["fieldRef"].get("fieldPath"), "x")
        else:
            env[e["name"]] = "x"
    out = []
    for a in argv:
        for name in ENV_REF.findall(str(a)):
            if name not in env:
                faults.append(f"{where}: args name $({name}), which the container's env does not define")
        out.append(ENV_REF.sub(lambda m: env.get(m.group(1), m.group(0)), str(a)))
    return out, env


def check_k8s(files, cli):
    """files: {path: [objects]}. Returns (faults, facts) — facts: what the compose check compares."""
    faults, objs = [], []
    for path, docs in files.items():
        if os.path.basename(path) == "kustomization.yaml":
            for d in docs:
                for r in (d or {}).get("resources") or []:
                    if os.path.join(os.path.dirname(path), r) not in files:
                        faults.append(f"{path}: resource {r} is not a file here")
            continue
        for i, o in enumerate(docs):
            if o is None:
                continue
            if not isinstance(o, dict):
                faults.append(f"{path}: document {i + 1} is not a mapping")
                continue
            objs.append((path, o))
    by_kind = {}
    for path, o in objs:
        kind, name = o.get("kind"), (o.get("metadata") or {}).get("name")
        where = f"{path}: {kind} {name}"
        if kind not in KINDS:
            faults.append(f"{path}: kind {kind!r} is not one this check knows ({', '.join(sorted(KINDS))})")
            continue
        if o.get("apiVersion") != KINDS[kind]:
            faults.append(f"{where}: apiVersion {o.get('apiVersion')!r}, a {kind} is {KINDS[kind]}")
        if not isinstance(name, str) or not DNS1123.match(name) or len(name) > 63:
            faults.append(f"{path}: a {kind} needs metadata.name, a DNS label (got {name!r})")
            continue
        labels = (o.get("metadata") or {}).get("labels") or {}
        for k, v in list(LABELS.items()) + [(COMPONENT, None)]:
            if (v is None and not labels.get(k)) or (v is not None and labels.get(k) != v):
                faults.append(f"{where}: label {k} must be {v or 'set'} (got {labels.get(k)!r}), as in every file")
        by_kind.setdefault(kind, {})[name] = (path, o)
    pods = []  # (where, kind, name, labels, pod spec, replicas)
    for kind in WORKLOADS:
        for name, (path, o) in by_kind.get(kind, {}).items():
            where, spec = f"{path}: {kind} {name}", o.get("spec") or {}
            tl, pod = template_labels(o), pod_of(o)
            if kind != "Job" or spec.get("selector"):
                sel = (spec.get("selector") or {}).get("matchLabels") or {}
                if not selects(sel, tl):
                    faults.append(f"{where}: spec.selector.matchLabels {sel} does not match the template's labels {tl}")
            if tl.get(COMPONENT) != (o["metadata"].get("labels") or {}).get(COMPONENT):
                faults.append(f"{where}: the template's {COMPONENT} differs from the object's")
            if not pod.get("containers"):
                faults.append(f"{where}: the pod template has no containers")
            pods.append((where, kind, name, tl, pod, spec.get("replicas", 1)))
    services = by_kind.get("Service", {})
    claims = by_kind.get("PersistentVolumeClaim", {})
    facts = {"shards": [], "partitions": []}
    for where, kind, name, tl, pod, replicas in pods:
        spec = by_kind[kind][name][1]["spec"]
        if kind == "StatefulSet":
            svc = services.get(spec.get("serviceName"))
            if not svc:
                faults.append(f"{where}: serviceName {spec.get('serviceName')!r} is no Service in these files")
            else:
                s = svc[1].get("spec") or {}
                if s.get("clusterIP") != "None":
                    faults.append(f"{where}: its serviceName {spec['serviceName']} is not headless (clusterIP: None)")
                if not selects(s.get("selector") or {}, tl):
                    faults.append(f"{where}: Service {spec['serviceName']}'s selector does not select its pods")
            if not isinstance(replicas, int) or replicas < 1:
                faults.append(f"{where}: replicas must be a whole number above 0, got {replicas!r}")
            if spec.get("podManagementPolicy", "OrderedReady") not in ("OrderedReady", "Parallel"):
                faults.append(f"{where}: podManagementPolicy {spec.get('podManagementPolicy')!r}")
        volumes = {v.get("name"): v for v in pod.get("volumes") or []}
        for v in volumes.values():
            claim = (v.get("persistentVolumeClaim") or {}).get("claimName")
            if claim is not None and claim not in claims:
                faults.append(f"{where}: volume {v.get('name')} claims {claim!r}, no PersistentVolumeClaim here")
        for c in (pod.get("initContainers") or []) + (pod.get("containers") or []):
            cw = f"{where}: container {c.get('name')}"
            unknown = sorted(set(c) - CONTAINER_FIELDS)
            if unknown:
                faults.append(f"{cw}: {', '.join(unknown)} is not a container field")
            if not c.get("name") or not c.get("image"):
                faults.append(f"{cw}: a container needs a name and an image")
            ports = {p.get("name"): p.get("containerPort") for p in c.get("ports") or []}
            for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
                pr = c.get(probe)
                if pr is None:
                    continue
                act = [a for a in PROBE_ACTIONS if a in pr]
                port = (pr.get(act[0]) or {}).get("port") if act and act[0] != "exec" else None
                if len(act) != 1:
                    faults.append(f"{cw}: {probe} needs exactly one of {', '.join(PROBE_ACTIONS)}")
                elif isinstance(port, str) and port not in ports:
                    faults.append(f"{cw}: {probe} names port {port!r}, which the container does not have")
                elif isinstance(port, int) and port not in ports.values():
                    faults.append(f"{cw}: {probe} dials port {port}, which the container does not declare")
            if c in (pod.get("containers") or []) and "requests" not in (c.get("resources") or {}):
                faults.append(f"{cw}: no resources.requests")
            for m in c.get("volumeMounts") or []:
                if m.get("name") not in volumes:
                    faults.append(f"{cw}: mounts volume {m.get('name')!r}, which the pod does not have")
            argv = container_argv(c)
            if argv is None and c.get("command", [None])[0] in ("/bin/sh", "sh"):
                env = {e["name"]: str(e.get("value", "")) for e in c.get("env") or []}
                for parts, out_dir in partition_steps("\n".join(map(str, c.get("args") or [])), env):
                    facts["partitions"].append((cw, parts, out_dir))
            if not argv or argv[0] != "serve":
                continue
            argv, _ = expand_env(argv, c, cw, faults)
            hosts = [f"{name}-{k}" for k in range(replicas)] if kind == "StatefulSet" and isinstance(replicas, int) \
                else [None]
            faults += serve_faults(cw, argv, cli, hosts)
            if option_value(argv, "--parts") == "auto" and kind == "StatefulSet":
                if str(option_value(argv, "--shards")) != str(replicas):
                    faults.append(f"{cw}: --shards {option_value(argv, '--shards')} is not replicas {replicas}: "
                                  f"parts would be dealt to shards that do not run, or shards would get none")
            listen = option_value(argv, "--listen") or ""
            port = int(listen.rsplit(":", 1)[1]) if listen.rsplit(":", 1)[-1].isdigit() else None
            if port is not None and port not in ports.values():
                faults.append(f"{cw}: --listen port {port} is not a containerPort of the container")
            cl = cluster_of(argv)
            if cl and cl[0] not in services:
                faults.append(f"{cw}: --cluster names etcd at {cl[0]}, no Service in these files "
                              "(docker/k8s/etcd.yaml)")
            facts["shards"].append({"where": cw, "argv": argv, "count": replicas, "cluster": cl, "port": port,
                                    "root": argv[1]})
    for name, (path, svc) in services.items():
        s, where = svc.get("spec") or {}, f"{path}: Service {name}"
        matched = [p for p in pods if selects(s.get("selector") or {}, p[3])]
        if not matched:
            faults.append(f"{where}: its selector {s.get('selector')} selects no pod template in these files")
        for p in s.get("ports") or []:
            if not isinstance(p.get("port"), int):
                faults.append(f"{where}: port {p.get('name')!r} needs a numeric port")
            tp = p.get("targetPort", p.get("port"))
            names = {q.get("name") for m in matched for c in m[4].get("containers") or [] for q in c.get("ports") or []}
            if isinstance(tp, str) and matched and tp not in names:
                faults.append(f"{where}: targetPort {tp!r} is no named port of the pods it selects")
    return faults, facts


# ---- Compose ------------------------------------------------------------------------------


def compose_env(svc):
    env = svc.get("environment") or {}
    if isinstance(env, list):
        env = dict(e.split("=", 1) for e in env if "=" in e)
    return {k: str(v) for k, v in env.items()}


def check_compose(path, doc, cli, compose_dir):
    faults, facts = [], {"shards": [], "partitions": []}
    if not isinstance(doc, dict) or not isinstance(doc.get("services"), dict):
        return [f"{path}: no services"], facts
    if "name" in doc:
        faults.append(f"{path}: a top-level name: (docker-compose 1.29 refuses it; docker/cluster/.env names it)")
    services, volumes = doc["services"], doc.get("volumes") or {}
    etcd = [n for n, s in services.items() if "etcd" in str(s.get("image", "")) or n == "etcd"]
    if not etcd:
        faults.append(f"{path}: no etcd service")
    shards = {n: s for n, s in services.items() if isinstance(s.get("command"), list) and s["command"][:1] == ["serve"]}
    if not shards:
        faults.append(f"{path}: no shard service (command: [serve, ...])")
    images = {}
    for n, s in services.items():
        where = f"{path}: service {n}"
        b = s.get("build")
        if b:
            ctx = os.path.join(compose_dir, b.get("context", ".") if isinstance(b, dict) else b)
            df = os.path.join(ctx, b.get("dockerfile", "Dockerfile") if isinstance(b, dict) else "Dockerfile")
            if not os.path.isfile(df):
                faults.append(f"{where}: build's Dockerfile {os.path.relpath(df, compose_dir)} is not there")
            images[s.get("image")] = n
        for v in s.get("volumes") or []:
            src = str(v).split(":")[0]
            if not src.startswith((".", "/", "$")) and src not in volumes:
                faults.append(f"{where}: volume {src!r} is not declared under volumes:")
        if s.get("command") and isinstance(s.get("entrypoint"), list) and s["entrypoint"][:1] == ["/bin/sh"]:
            for parts, out_dir in partition_steps("\n".join(map(str, s["command"])), compose_env(s)):
                facts["partitions"].append((where, parts, out_dir))
        profiles = s.get("profiles")
        if not profiles and "restart" not in s:
            faults.append(f"{where}: no restart policy")
        if n in shards or n in etcd:
            hc = s.get("healthcheck") or {}
            if not hc.get("test") or hc.get("disable"):
                faults.append(f"{where}: no healthcheck")
    ids, counts = {}, set()
    for n, s in shards.items():
        where = f"{path}: service {n}"
        argv = [str(a) for a in s["command"]]
        faults += serve_faults(where, argv, cli, [None])
        if s.get("image") not in images:
            faults.append(f"{where}: image {s.get('image')!r} is built by no service here")
        shard, count = option_value(argv, "--shard"), option_value(argv, "--shards")
        if shard is not None and shard.isdigit():
            if shard in ids:
                faults.append(f"{where}: --shard {shard} is service {ids[shard]}'s too")
            ids[shard] = n
        counts.add(count)
        listen = option_value(argv, "--listen") or ""
        host, _, port = listen.rpartition(":")
        if host != n:
            faults.append(f"{where}: --listen {listen}: listen on the service's name ({n}:PORT), the address it "
                          "registers in the shard map and the others dial")
        test = " ".join(map(str, (s.get("healthcheck") or {}).get("test") or []))
        if listen and test and f"/dev/tcp/{host}/{port}" not in test:
            faults.append(f"{where}: its healthcheck does not dial its --listen {listen}")
        dep = s.get("depends_on") if isinstance(s.get("depends_on"), dict) else {}
        for e in etcd:
            if (dep.get(e) or {}).get("condition") != "service_healthy":
                faults.append(f"{where}: depends_on {e} needs condition: service_healthy")
        cl = cluster_of(argv)
        if cl and cl[0] not in etcd:
            faults.append(f"{where}: --cluster names etcd at {cl[0]}, not the etcd service")
        facts["shards"].append({"where": where, "argv": argv, "count": len(shards), "cluster": cl,
                                "port": int(port) if port.isdigit() else None,
                                "root": argv[1] if len(argv) > 1 else None})
    if shards and (len(counts) != 1 or counts != {str(len(shards))}):
        faults.append(f"{path}: --shards says {sorted(map(str, counts))}, and there are {len(shards)} shard services")
    if shards and set(ids) != {str(k) for k in range(len(shards))}:
        faults.append(f"{path}: the shards are numbered {sorted(map(int, ids))}, not 0..{len(shards) - 1} once each")
    producers = [n for n, s in services.items() if s.get("entrypoint") and n not in shards and n not in etcd]
    for n, s in shards.items():
        dep = s.get("depends_on") or {}
        for p in producers:
            if not isinstance(dep, dict) or (dep.get(p) or {}).get("condition") != "service_completed_successfully":
                faults.append(f"{path}: service {n}: depends_on {p} needs condition: service_completed_successfully")
    return faults, facts


# ---- both --------------------------------------------------------------------------------


def check_facts(where, facts):
    """Shards served from a root some partition step writes, with at least --shards parts."""
    faults = []
    for sh in facts["shards"]:
        made = [p for p in facts["partitions"] if p[2] == sh["root"]]
        if not made:
            faults.append(f"{sh['where']}: serves {sh['root']}, which no partition step in {where} writes "
                          f"(they write {sorted(str(p[2]) for p in facts['partitions'])})")
        for w, parts, _ in made:
            if parts is None or parts < sh["count"]:
                faults.append(f"{w}: partitions into {parts} parts, fewer than the {sh['count']} shards")
    return faults


def agree(k8s, compose):
    """docker/k8s and docker/cluster run the same cluster: name, port, shard count, parts."""
    faults = []
    for key, what in (("cluster", "cluster name"), ("port", "gRPC port"), ("count", "shard count")):
        a = {(s[key][2] if key == "cluster" and s[key] else s[key]) for s in k8s["shards"]}
        b = {(s[key][2] if key == "cluster" and s[key] else s[key]) for s in compose["shards"]}
        if a and b and a != b:
            faults.append(f"docker/k8s and docker/cluster differ on the {what}: {sorted(map(str, a))} and "
                          f"{sorted(map(str, b))}")
    a, b = {p[1] for p in k8s["partitions"]}, {p[1] for p in compose["partitions"]}
    if a and b and a != b:
        faults.append(f"docker/k8s and docker/cluster differ on the parts: {sorted(map(str, a))} and "
                      f"{sorted(map(str, b))}")
    return faults


def load(source):
    """({k8s path: [objects]}, {compose path: doc}, {other yaml path: doc}, faults): every YAML parsed."""
    k8s, compose, other, faults = {}, {}, {}, []
    for d in (K8S_DIR, COMPOSE_DIR):
        paths = sorted(glob.glob(os.path.join(source, d, "*.yaml")) + glob.glob(os.path.join(source, d, "*.yml")))
        if not paths:
            faults.append(f"{d}: no YAML files")
        for p in paths:
            rel = os.path.relpath(p, source)
            try:
                with open(p) as f:
                    docs = list(yaml.safe_load_all(f))
            except yaml.YAMLError as e:
                faults.append(f"{rel}: not YAML: {e}")
                continue
            if d == K8S_DIR:
                k8s[rel] = docs
            elif os.path.basename(p).startswith("compose"):
                compose[rel] = docs[0] if docs else None
            else:
                other[rel] = docs[0] if docs else None
    return k8s, compose, other, faults


def check(source, cli, k8s, compose, other):
    k8s_faults, kf = check_k8s(k8s, cli)
    faults = k8s_faults + check_facts(K8S_DIR, kf)
    for path, doc in compose.items():
        cf_faults, cf = check_compose(path, doc, cli, os.path.join(source, os.path.dirname(path)))
        faults += cf_faults + check_facts(path, cf) + agree(kf, cf)
    for path, doc in other.items():  # prometheus.yml: its targets are compose services
        for sc in (doc or {}).get("scrape_configs") or []:
            for sc_static in sc.get("static_configs") or []:
                for t in sc_static.get("targets") or []:
                    host = t.rsplit(":", 1)[0]
                    if not any(host in (d or {}).get("services", {}) for d in compose.values()):
                        faults.append(f"{path}: target {t} is no service of the compose file")
    return faults


# ---- the self-test: faults planted in copies ------------------------------------------------


def find(docs, kind, name=None):
    return next(o for o in docs if o and o.get("kind") == kind and (name is None or o["metadata"]["name"] == name))


def shard_ss(k8s):
    return find(k8s[f"{K8S_DIR}/featstore-shard.yaml"], "StatefulSet")


def shard_container(k8s):
    return pod_of(shard_ss(k8s))["containers"][0]


def set_arg(argv, opt, value):
    argv[argv.index(opt) + 1] = value


def plants():
    """([prefix each new fault must start with, one fault each], planter(k8s, compose))."""
    ss = f"{K8S_DIR}/featstore-shard.yaml: StatefulSet featstore-shard"
    cy = f"{COMPOSE_DIR}/compose.yaml"

    def rename(argv, old, new):
        argv[argv.index(old)] = new

    def compose_svc(c, n):
        return c[cy]["services"][n]

    return [
        ([f"{ss}: container shard: --insecur is not an option"],
         lambda k, c: rename(shard_container(k)["args"], "--insecure", "--insecur")),
        ([f"{ss}: container shard: featstore refuses the command line on host featstore-shard-0: exit 2"],
         lambda k, c: shard_container(k)["args"].remove("--insecure")),
        ([f"{ss}: serviceName 'featstore-shards' is no Service"],
         lambda k, c: shard_ss(k)["spec"].__setitem__("serviceName", "featstore-shards")),
        ([f"{ss}: spec.selector.matchLabels"],
         lambda k, c: shard_ss(k)["spec"]["selector"]["matchLabels"].__setitem__("app.kubernetes.io/name", "featstor")),
        ([f"{ss}: container shard: --shards 3 is not replicas 4",
          f"{ss}: container shard: featstore refuses the command line on host featstore-shard-3: exit 1: "
          "featstore: error: --shard ordinal is shard 3 here, not below --shards 3"],
         lambda k, c: set_arg(shard_container(k)["args"], "--shards", "3")),
        ([f"{ss}: container shard: featstore refuses the command line on host featstore-shard-4",
          f"{ss}: container shard: --shards 4 is not replicas 5",
          "docker/k8s and docker/cluster differ on the shard count"],
         lambda k, c: shard_ss(k)["spec"].__setitem__("replicas", 5)),
        ([f"{ss}: its serviceName featstore-shard is not headless"],
         lambda k, c: find(k[f"{K8S_DIR}/featstore-shard.yaml"], "Service")["spec"].pop("clusterIP")),
        ([f"{ss}: container shard: mounts volume 'dat'"],
         lambda k, c: shard_container(k)["volumeMounts"][0].__setitem__("name", "dat")),
        ([f"{ss}: container shard: readinessProbe names port 'rpc'"],
         lambda k, c: shard_container(k)["readinessProbe"]["tcpSocket"].__setitem__("port", "rpc")),
        ([f"{ss}: container shard: volumeMount is not a container field"],
         lambda k, c: shard_container(k).__setitem__("volumeMount", [])),
        ([f"{ss}: container shard: args name $(POD_IPS)",
          f"{ss}: container shard: featstore refuses the command line on host featstore-shard-0: exit 2"],
         lambda k, c: set_arg(shard_container(k)["args"], "--listen", "$(POD_IPS):7000")),
        ([f"{K8S_DIR}/featstore-shard.yaml: Service featstore-shard: targetPort 'grpcs'"],
         lambda k, c: find(k[f"{K8S_DIR}/featstore-shard.yaml"], "Service")["spec"]["ports"][0]
         .__setitem__("targetPort", "grpcs")),
        ([f"{K8S_DIR}/partition-job.yaml: Job featstore-partition-demo: container partition: partitions into 2 parts",
          "docker/k8s and docker/cluster differ on the parts"],
         lambda k, c: find(k[f"{K8S_DIR}/partition-job.yaml"], "Job")["spec"]["template"]["spec"]["containers"][0]
         ["env"][1].__setitem__("value", "2")),
        ([f"{K8S_DIR}/data.yaml: PersistentVolumeClaim featstore-data: label app.kubernetes.io/part-of"],
         lambda k, c: find(k[f"{K8S_DIR}/data.yaml"], "PersistentVolumeClaim")["metadata"]["labels"]
         .pop("app.kubernetes.io/part-of")),
        ([f"{K8S_DIR}/etcd.yaml: StatefulSet featstore-etcd: apiVersion 'apps/v1beta1'"],
         lambda k, c: find(k[f"{K8S_DIR}/etcd.yaml"], "StatefulSet").__setitem__("apiVersion", "apps/v1beta1")),
        ([f"{cy}: service shard1: --shardz is not an option", f"{cy}: the shards are numbered [0, 2, 3]"],
         lambda k, c: rename(compose_svc(c, "shard1")["command"], "--shard", "--shardz")),
        ([f"{cy}: service shard3: --shard 2 is service shard2's too", f"{cy}: the shards are numbered [0, 1, 2]"],
         lambda k, c: set_arg(compose_svc(c, "shard3")["command"], "--shard", "2")),
        ([f"{cy}: service shard0: featstore refuses the command line: exit 2"],
         lambda k, c: set_arg(compose_svc(c, "shard0")["command"], "--parts", "0,4,8,x")),
        ([f"{cy}: service shard2: no healthcheck"],
         lambda k, c: compose_svc(c, "shard2").pop("healthcheck")),
        ([f"{cy}: service shard2: --listen 0.0.0.0:7000: listen on the service's name",
          f"{cy}: service shard2: its healthcheck does not dial its --listen 0.0.0.0:7000"],
         lambda k, c: set_arg(compose_svc(c, "shard2")["command"], "--listen", "0.0.0.0:7000")),
        ([f"{cy}: a top-level name:"],
         lambda k, c: c[cy].__setitem__("name", "featstore")),
        ([f"{cy}: service shard0: depends_on partition needs condition: service_completed_successfully"],
         lambda k, c: compose_svc(c, "shard0").__setitem__(  # its own: the anchor's is every shard's
             "depends_on", {k: v for k, v in compose_svc(c, "shard0")["depends_on"].items() if k != "partition"})),
        ([f"{cy}: service etcd: no restart policy"],
         lambda k, c: compose_svc(c, "etcd").pop("restart")),
        (["docker/k8s and docker/cluster differ on the cluster name"],
         lambda k, c: [set_arg(compose_svc(c, f"shard{i}")["command"], "--cluster", "etcd://etcd:2379/other")
                       for i in range(4)]),
    ]


def self_test(source, cli, k8s, compose, other):
    base = set(check(source, cli, k8s, compose, other))
    faults = []
    for prefixes, plant in plants():
        k, c = copy.deepcopy(k8s), copy.deepcopy(compose)
        try:
            plant(k, c)
        except (KeyError, ValueError, StopIteration, IndexError) as e:
            faults.append(f"self-test: cannot plant {prefixes[0]!r} (the files changed?): {e!r}")
            continue
        found = [f for f in check(source, cli, k, c, other) if f not in base]
        faults += missed(found, prefixes, prefixes[0])
    return faults


# ---- the tools, where they are here ----------------------------------------------------------


def documents(path):
    with open(path) as f:
        return [d for d in yaml.safe_load_all(f) if d]


def kubectl_decode(kubectl, doc, work):
    """None if kubectl decodes doc into its typed structs offline, else what it said. `set env --local`
    decodes every object; one without a pod template is then refused for that alone."""
    p = os.path.join(work, "doc.yaml")
    with open(p, "w") as f:
        yaml.safe_dump(doc, f)
    run = subprocess.run([kubectl, "set", "env", "--local", "-f", p, "FS_MANIFEST_CHECK=1", "-o", "name"],
                         capture_output=True, text=True, timeout=60)
    if run.returncode == 0 or ("does not have a pod template" in run.stderr and "unable to decode" not in run.stderr):
        return None
    return (run.stderr or run.stdout).strip()


def kubectl_checks(kubectl, source, k8s, work):
    """(faults, notes)."""
    faults, notes = [], []
    files = [p for p in sorted(k8s) if os.path.basename(p) != "kustomization.yaml"]
    probe = subprocess.run([kubectl, "apply", "--dry-run=client", "--validate=false", "--request-timeout=5s",
                            "-f", os.path.join(source, files[0]), "-o", "name"],
                           capture_output=True, text=True, timeout=120)
    if probe.returncode == 0:
        for p in files:
            run = subprocess.run([kubectl, "apply", "--dry-run=client", "--validate=false", "--request-timeout=5s",
                                  "-f", os.path.join(source, p), "-o", "name"], capture_output=True, text=True,
                                 timeout=120)
            if run.returncode != 0:
                faults.append(f"{p}: kubectl apply --dry-run=client: {run.stderr.strip()}")
        notes.append(f"kubectl apply --dry-run=client: {len(files)} files")
    else:
        notes.append("SKIPPED kubectl apply --dry-run=client (it needs an API server's discovery here: "
                     f"{probe.stderr.strip().splitlines()[-1] if probe.stderr.strip() else probe.returncode})")
    # Offline: each object decoded into kubectl's typed structs; a planted wrong type must fail.
    n = 0
    for p in files:
        for doc in documents(os.path.join(source, p)):
            said = kubectl_decode(kubectl, doc, work)
            n += 1
            if said:
                faults.append(f"{p}: {doc.get('kind')} {doc.get('metadata', {}).get('name')}: kubectl cannot decode "
                              f"it: {said}")
    bad = copy.deepcopy(find(documents(os.path.join(source, K8S_DIR, "featstore-shard.yaml")), "StatefulSet"))
    bad["spec"]["replicas"] = "four"
    if not kubectl_decode(kubectl, bad, work):
        faults.append("self-test: kubectl set env --local decoded a StatefulSet with replicas: \"four\"")
    notes.append(f"kubectl set env --local: {n} objects decoded")
    run = subprocess.run([kubectl, "kustomize", os.path.join(source, K8S_DIR)], capture_output=True, text=True,
                         timeout=120)
    if run.returncode != 0:
        faults.append(f"{K8S_DIR}/kustomization.yaml: kubectl kustomize: {run.stderr.strip()}")
    else:
        rendered = sorted((o["kind"], o["metadata"]["name"]) for o in yaml.safe_load_all(run.stdout) if o)
        files_objs = sorted((o["kind"], o["metadata"]["name"])
                            for p in files for o in documents(os.path.join(source, p)))
        if rendered != files_objs:
            faults.append(f"{K8S_DIR}/kustomization.yaml renders {rendered}, the files hold {files_objs}")
        notes.append(f"kubectl kustomize: {len(rendered)} objects")
    return faults, notes


def compose_checks(dc, source, compose):
    faults = []
    for p in compose:
        run = subprocess.run([dc, "-f", os.path.join(source, p), "config", "-q"], capture_output=True, text=True,
                             timeout=120, cwd=os.path.join(source, os.path.dirname(p)))
        if run.returncode != 0:
            faults.append(f"{p}: docker-compose config: {(run.stderr or run.stdout).strip()}")
    return faults


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--source", required=True)
    ap.add_argument("--featstore", required=True)
    ap.add_argument("--kubectl", default=shutil.which("kubectl"))
    ap.add_argument("--docker-compose", default=shutil.which("docker-compose"))
    a = ap.parse_args()
    a.source = os.path.abspath(a.source)
    with tempfile.TemporaryDirectory(prefix="fs-manifests-") as work:
        cli = Cli(a.featstore, work)
        k8s, compose, other, faults = load(a.source)
        if faults:
            return report(faults, "")
        faults = self_test(a.source, cli, k8s, compose, other)
        faults += check(a.source, cli, k8s, compose, other)
        notes = [f"{sum(len([d for d in v if d]) for v in k8s.values())} YAML documents in {K8S_DIR}, "
                 f"{len(compose)} compose file(s), {len(plants())} planted faults found"]
        if a.kubectl and os.access(a.kubectl, os.X_OK):
            kf, kn = kubectl_checks(a.kubectl, a.source, k8s, work)
            faults += kf
            notes += kn
        else:
            notes.append("SKIPPED the kubectl checks: no kubectl")
        if a.docker_compose and os.access(a.docker_compose, os.X_OK):
            faults += compose_checks(a.docker_compose, a.source, compose)
            notes.append("docker-compose config -q")
        else:
            notes.append("SKIPPED docker-compose config: no docker-compose")
        for n in notes:
            print(n)
        return report(faults, "; ".join(notes))


if __name__ == "__main__":
    sys.exit(main())
