"""gpu_suite_loads.py: load to ready of every model the serving suite exported, at the default max_batch_size.

    gpu_suite_loads.py --inferd PATH --exports DIR [--device cuda:0] [--precisions fp32 fp16] [--out FILE]

DIR is the repository export_suite.py left (its --workdir's repository/: <model>-<exporter>/model.onnx with a
model.json giving max_dims at the suite's largest input).  Each model is loaded as a user would serve it: its
max_dims kept, max_batch_size left out (the daemon's default, 64), at each precision.  One daemon (model control
explicit, no compile cache directory) times POST /v2/repository/models/<name>/load until it answers (200: ready;
anything else: the load's error, recorded), then unloads it.  Prints one line per load and the slowest; writes
the records as JSON to --out.
"""

import argparse
import json
import os
import sys
import tempfile
import time
import urllib.request

from cpu_load_vs_ort import start  # the same daemon start (explicit model control, a port file)


def http(port, method, path):
    """(status, body) of an HTTP request to the daemon."""
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=b"" if method == "POST" else None,
                                 method=method)
    try:
        with urllib.request.urlopen(req, timeout=900) as r:
            return r.status, r.read().decode(errors="replace")
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(errors="replace")


def make_repo(exports, precisions, repo):
    """A repository of links to every export, one model per (export, precision); the names, in order."""
    names = []
    for d in sorted(os.listdir(exports)):
        src = os.path.join(exports, d)
        if not os.path.isfile(os.path.join(src, "model.onnx")) or not os.path.isfile(os.path.join(src, "model.json")):
            continue
        doc = json.load(open(os.path.join(src, "model.json")))
        doc.pop("max_batch_size", None)
        for p in precisions:
            name = f"{d}-{p}".replace(".", "_")
            os.makedirs(os.path.join(repo, name), exist_ok=True)
            link = os.path.join(repo, name, "model.onnx")
            if not os.path.exists(link):
                os.symlink(os.path.abspath(os.path.join(src, "model.onnx")), link)
            with open(os.path.join(repo, name, "model.json"), "w") as f:
                json.dump(dict(doc, precision=p), f)
            names.append((name, d, p))
    return names


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--inferd", required=True)
    ap.add_argument("--exports", required=True, help="export_suite.py's repository directory")
    ap.add_argument("--device", default="cuda:0")
    ap.add_argument("--precisions", nargs="+", default=["fp32", "fp16"])
    ap.add_argument("--workdir", default="")
    ap.add_argument("--out", default="")
    a = ap.parse_args()
    work = a.workdir or tempfile.mkdtemp(prefix="inferd-suite-loads-")
    repo = os.path.join(work, "repo")
    os.makedirs(repo, exist_ok=True)
    names = make_repo(a.exports, a.precisions, repo)
    if not names:
        sys.exit(f"no model.onnx with a model.json under {a.exports}")
    daemon, port = start(os.path.abspath(a.inferd), repo, work, [f"--device={a.device}"])
    recs = []
    try:
        for name, export, prec in names:
            t = time.perf_counter()
            st, body = http(port, "POST", f"/v2/repository/models/{name}/load")
            s = time.perf_counter() - t
            rec = {"model": export, "precision": prec, "status": st, "load_s": round(s, 3)}
            if st != 200:
                rec["error"] = body[:300]
            else:
                http(port, "POST", f"/v2/repository/models/{name}/unload")
            recs.append(rec)
            print(f"{export} {prec}: {'ready' if st == 200 else 'refused'} after {s:.2f} s"
                  + ("" if st == 200 else f" ({body[:160]})"), flush=True)
            if a.out:
                with open(a.out, "w") as f:
                    json.dump(recs, f, indent=1)
    finally:
        daemon.terminate()
        daemon.wait()
    ok = [r for r in recs if r["status"] == 200]
    for p in a.precisions:
        mine = sorted((r for r in ok if r["precision"] == p), key=lambda r: r["load_s"])
        if mine:
            print(f"{p}: {len(mine)} loaded, median {mine[len(mine) // 2]['load_s']:.2f} s, slowest "
                  f"{mine[-1]['model']} {mine[-1]['load_s']:.2f} s; over 5 s: {sum(r['load_s'] > 5 for r in mine)}")


if __name__ == "__main__":
    main()
