#!/usr/bin/python3
"""deploy_validate.py: checks conf/deploy for tests/test_deploy_yaml.sh.

  deploy_validate.py --srcdir DIR --inferd PATH --unit FILE --metrics FILE

- every *.yaml / *.yml parses (PyYAML, safe_load_all) and the JSON dashboard parses;
- every inferd command line the deploy files hold (the ServingRuntime's container on top of
  the Containerfile's ENTRYPOINT, the Containerfile's ENTRYPOINT + CMD, the inferd@.service
  template's ExecStart for instance 3) is accepted by `inferd --check-config`, and
  `--print-config` shows the values the surrounding file relies on (ports, probes, device);
- the InferenceService names the ServingRuntime and one of its model formats;
- the ports of nginx's upstream, Prometheus' static targets and the unit template agree;
- every inferd_* metric the dashboard and the scrape config name is one the daemon exports
  (FILE: a /metrics text taken from a running daemon).
"""

import argparse
import glob
import json
import os
import re
import shlex
import subprocess
import sys

FAILURES = []


def check(cond, what):
    """Record a failed check without stopping."""
    if not cond:
        FAILURES.append(what)
        print("FAIL:", what, file=sys.stderr)
    return cond


class Inferd:
    """Runs the daemon under test on a command line taken from a deploy file."""

    def __init__(self, binary, srcdir):
        self.binary, self.srcdir = binary, srcdir

    def localize(self, argv):
        """argv with the installed paths of inferd and its config replaced by the build's."""
        out = [self.binary]
        for a in argv[1:]:
            if a.startswith("--config=") and a.endswith("inferd/inferd.conf") and not os.path.exists(a[9:]):
                a = "--config=" + os.path.join(self.srcdir, "conf", "inferd.conf")
            out.append(a)
        return out

    def config(self, what, argv):
        """--check-config, then --print-config as a dict; None when inferd refuses argv."""
        if not check(os.path.basename(argv[0]) == "inferd", "%s: runs %s, not inferd" % (what, argv[0])):
            return None
        local = self.localize(argv)
        # --check-config also wants the model repository on disk; the deployment's (/mnt/models,
        # /usr/share/...) is not here, so the demo repository stands in, given last to win.
        demo = "--model_repository=" + os.path.join(self.srcdir, "conf", "models")
        r = subprocess.run(local + [demo, "--check-config"], capture_output=True, text=True)
        if not check(r.returncode == 0, "%s: inferd --check-config refuses %s: %s" % (what, argv[1:], r.stderr.strip())):
            return None
        r = subprocess.run(local + ["--print-config"], capture_output=True, text=True)
        if not check(r.returncode == 0, "%s: --print-config failed: %s" % (what, r.stderr.strip())):
            return None
        conf = {}
        for line in r.stdout.splitlines():
            k, _, v = line.partition("=")
            conf[k.strip()] = v.strip().strip('"')
        print("ok: %s: inferd %s" % (what, " ".join(shlex.quote(a) for a in argv[1:])))
        return conf


def load_yaml(srcdir):
    """{file name: [documents]} of every YAML file in conf/deploy."""
    import yaml
    docs = {}
    files = sorted(glob.glob(os.path.join(srcdir, "conf/deploy/*.yaml")) +
                   glob.glob(os.path.join(srcdir, "conf/deploy/*.yml")))
    check(files, "no YAML file in conf/deploy")
    for f in files:
        try:
            with open(f) as fh:
                docs[os.path.basename(f)] = [d for d in yaml.safe_load_all(fh) if d is not None]
            check(docs[os.path.basename(f)], "%s: no document" % f)
            print("ok: %s parses" % os.path.basename(f))
        except yaml.YAMLError as e:
            check(False, "%s: %s" % (f, e))
    return docs


def containerfile_argv(srcdir):
    """(ENTRYPOINT, CMD, HEALTHCHECK CMD) of the Containerfile, each a list (exec form only)."""
    found = {}
    with open(os.path.join(srcdir, "conf/deploy/Containerfile")) as f:
        for line in f:
            m = re.match(r"^(ENTRYPOINT|CMD|HEALTHCHECK)\s+(.*)$", line.strip())
            if not m:
                continue
            text = m.group(2)
            if m.group(1) == "HEALTHCHECK":
                text = text[text.index("CMD") + 3:].strip()
            try:
                found[m.group(1)] = json.loads(text)
            except ValueError:
                check(False, "Containerfile: %s is not in exec (JSON array) form" % m.group(1))
    for k in ("ENTRYPOINT", "CMD"):
        check(k in found, "Containerfile: no %s" % k)
    return found.get("ENTRYPOINT", []), found.get("CMD", []), found.get("HEALTHCHECK", [])


def check_containerfile(inferd, srcdir):
    """The image's default command line; returns its ENTRYPOINT."""
    entry, cmd, health = containerfile_argv(srcdir)
    if not entry:
        return []
    conf = inferd.config("Containerfile ENTRYPOINT + CMD", entry + cmd)
    if conf:
        check(conf.get("listen_address") in ("0.0.0.0", "::"), "Containerfile: inferd does not listen on every interface")
        with open(os.path.join(srcdir, "conf/deploy/Containerfile")) as f:
            text = f.read()
        check(re.search(r"^EXPOSE\s+%s\b" % conf["http_port"], text, re.M),
              "Containerfile: EXPOSE is not http_port %s" % conf["http_port"])
        check(health and ("--http=127.0.0.1:%s" % conf["http_port"]) in health,
              "Containerfile: HEALTHCHECK does not ask inferctl at http_port %s" % conf["http_port"])
    return entry


def check_kserve(inferd, docs, entry):
    """The ServingRuntime's containers and the InferenceService that uses it."""
    runtimes = {}
    services = []
    for f, ds in docs.items():
        for d in ds:
            kind = d.get("kind")
            if kind in ("ServingRuntime", "ClusterServingRuntime"):
                runtimes[d["metadata"]["name"]] = (f, d)
            elif kind == "InferenceService":
                services.append((f, d))
    check(runtimes, "no ServingRuntime in conf/deploy")
    check(services, "no InferenceService in conf/deploy")
    for name, (f, rt) in runtimes.items():
        spec = rt["spec"]
        check("v2" in spec.get("protocolVersions", []), "%s: protocolVersions lacks v2" % f)
        for c in spec["containers"]:
            argv = (c.get("command") or entry) + c.get("args", [])
            conf = inferd.config("%s container %s" % (f, c["name"]), argv)
            if not conf:
                continue
            port = int(conf["http_port"])
            check(conf.get("listen_address") in ("0.0.0.0", "::"), "%s: inferd listens on %s only" % (f, conf.get("listen_address")))
            check(port in [p["containerPort"] for p in c.get("ports", [])], "%s: containerPort is not http_port %d" % (f, port))
            probe = c.get("readinessProbe", {}).get("httpGet", {})
            check(probe.get("path") == "/v2/health/ready" and probe.get("port") == port,
                  "%s: readinessProbe is not GET /v2/health/ready on port %d" % (f, port))
            ann = spec.get("annotations", {})
            check(str(ann.get("prometheus.kserve.io/port")) == str(port) and ann.get("prometheus.kserve.io/path") == "/metrics",
                  "%s: the prometheus.kserve.io annotations do not point at /metrics on port %d" % (f, port))
    for f, isvc in services:
        model = isvc["spec"]["predictor"]["model"]
        rt = runtimes.get(model.get("runtime"))
        if not check(rt, "%s: runtime %s is not in conf/deploy" % (f, model.get("runtime"))):
            continue
        formats = [m["name"] for m in rt[1]["spec"]["supportedModelFormats"]]
        check(model["modelFormat"]["name"] in formats, "%s: model format %s is not one the runtime serves" % (f, model["modelFormat"]["name"]))
        check(model.get("protocolVersion") == "v2", "%s: protocolVersion is not v2" % f)


def systemd_expand(s, instance):
    """The ExecStart specifiers the template uses: %i, %% and $$ (a literal $)."""
    s = re.sub(r"%%|%i", lambda m: "%" if m.group(0) == "%%" else instance, s)
    check("%" not in s, "inferd@.service: a specifier other than %i in ExecStart")
    return s.replace("$$", "$")


def check_unit(inferd, unit, name="inferd", device="cuda:3"):
    """NAME@3: the shell line of ExecStart run with --print-config; returns the port formula's base."""
    with open(unit) as f:
        lines = [l.strip() for l in f if l.startswith("ExecStart=")]
    if not check(len(lines) == 1, "%s: not exactly one ExecStart" % unit):
        return None
    argv = shlex.split(systemd_expand(lines[0][len("ExecStart="):], "3"))
    if argv[:2] == ["/bin/sh", "-c"]:
        # Run the line as systemd would, with printf in front of inferd: the shell does the
        # arithmetic and the quoting, and prints the argv inferd would get, one per line.
        script, n = re.subn(r"^exec\s+", lambda m: "exec printf '%s\\n' ", argv[2])
        if not check(n == 1, "inferd@.service: the shell does not exec inferd"):
            return None
        r = subprocess.run(["/bin/sh", "-c", script], capture_output=True, text=True)
        if not check(r.returncode == 0, "inferd@.service: the ExecStart shell line fails: %s" % r.stderr.strip()):
            return None
        argv = r.stdout.splitlines()
    conf = inferd.config("inferd@3.service ExecStart", argv)
    if not conf:
        return None
    check(conf.get("device") == device, "%s@3.service: device is %s, not %s" % (name, conf.get("device"), device))
    check(conf.get("shm_socket") == "/run/%s-3/inferd.sock" % name, "%s@3.service: shm_socket %s" % (name, conf.get("shm_socket")))
    with open(unit) as f:
        check(re.search(r"^RuntimeDirectory=%s-%%i$" % re.escape(name), f.read(), re.M),
              "%s@.service: RuntimeDirectory is not %s-%%i" % (name, name))
    return int(conf["http_port"]) - 3


def check_ports(srcdir, docs, base):
    """nginx's upstream servers and Prometheus' static targets are instances 0.. of the template."""
    with open(os.path.join(srcdir, "conf/deploy/inferd-upstream.conf")) as f:
        nginx = [int(p) for p in re.findall(r"^\s*server\s+127\.0\.0\.1:(\d+)", f.read(), re.M)]
    check(nginx, "inferd-upstream.conf: no server")
    check(re.search(r"proxy_next_upstream\s+error timeout http_502 http_503 non_idempotent;",
                    open(os.path.join(srcdir, "conf/deploy/inferd-upstream.conf")).read()),
          "inferd-upstream.conf: proxy_next_upstream is not error timeout http_502 http_503 non_idempotent")
    targets = []
    for d in docs.get("prometheus.yml", []):
        for job in d.get("scrape_configs", []):
            for sc in job.get("static_configs", []):
                targets += [int(t.rsplit(":", 1)[1]) for t in sc["targets"]]
    check(targets, "prometheus.yml: no static target")
    if base is not None:
        want = [base + i for i in range(len(nginx))]
        check(nginx == want, "inferd-upstream.conf: ports %s, the template gives %s" % (nginx, want))
        check(targets == want, "prometheus.yml: ports %s, the template gives %s" % (targets, want))


def exported_names(metrics_file):
    """Metric names in a /metrics text."""
    names = set()
    with open(metrics_file) as f:
        for line in f:
            if line.strip() and not line.startswith("#"):
                names.add(re.match(r"[a-zA-Z_:][a-zA-Z0-9_:]*", line).group(0))
    return names


def check_metrics(srcdir, metrics_file):
    """Every inferd_* name in the dashboard and the scrape config is exported."""
    have = exported_names(metrics_file)
    check(any(n.startswith("inferd_") for n in have), "%s: no inferd_ metric" % metrics_file)
    path = os.path.join(srcdir, "conf/deploy/grafana-dashboard.json")
    try:
        with open(path) as f:
            text = f.read()
        dash = json.loads(text)
        check(dash.get("panels"), "grafana-dashboard.json: no panel")
        print("ok: grafana-dashboard.json parses, %d panels" % len(dash.get("panels", [])))
    except ValueError as e:
        check(False, "grafana-dashboard.json: %s" % e)
        return
    used = set(re.findall(r"\binferd_[a-z0-9_]+", text))
    with open(os.path.join(srcdir, "conf/deploy/prometheus.yml")) as f:
        used |= set(re.findall(r"\binferd_[a-z0-9_]+", f.read()) ) - {"inferd_kserve"}
    check(used, "grafana-dashboard.json: names no inferd metric")
    for n in sorted(used):
        check(n in have, "grafana-dashboard.json: %s is not a metric inferd exports" % n)
    print("ok: the dashboard's %d metrics are all exported" % len(used))


def main():
    """Run every check; exit 1 when any failed."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--srcdir", required=True)
    p.add_argument("--inferd", required=True)
    p.add_argument("--unit", required=True)
    p.add_argument("--cpu-unit", help="inferd-cpu@.service, the template with device=cpu")
    p.add_argument("--metrics", required=True)
    args = p.parse_args()
    inferd = Inferd(args.inferd, args.srcdir)
    # The checker itself must be able to fail.
    r = subprocess.run([args.inferd, "--check-config", "--no_such_key=1"], capture_output=True)
    check(r.returncode != 0, "inferd --check-config accepts an unknown flag: the checks below prove nothing")
    docs = load_yaml(args.srcdir)
    entry = check_containerfile(inferd, args.srcdir)
    check_kserve(inferd, docs, entry)
    base = check_unit(inferd, args.unit)
    check_ports(args.srcdir, docs, base)
    if args.cpu_unit:
        cpu_base = check_unit(inferd, args.cpu_unit, "inferd-cpu", "cpu")
        check(cpu_base is not None and base is not None and abs(cpu_base - base) >= 64,
              "inferd@ and inferd-cpu@ instances share ports (bases %s and %s)" % (base, cpu_base))
    # The packaged inferd.service takes the default http_port; nginx in front must not.
    default_port = int((inferd.config("the defaults", ["inferd"]) or {}).get("http_port", 0))
    with open(os.path.join(args.srcdir, "conf/deploy/inferd-upstream.conf")) as f:
        listens = [int(p) for p in re.findall(r"^\s*listen\s+(?:[\d.]+:)?(\d+)", f.read(), re.M)]
    check(listens and default_port not in listens,
          "inferd-upstream.conf listens on %s, the port inferd.service takes" % default_port)
    check_metrics(args.srcdir, args.metrics)
    if FAILURES:
        print("%d check(s) failed" % len(FAILURES), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
