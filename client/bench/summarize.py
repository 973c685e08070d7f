#!/usr/bin/env python3
"""summarize.py: inferd's performance targets against a results directory of run-cpu.sh / run-gpu.sh.

    summarize.py RESULTS_DIR > summary.md

Reads every *.json file (one JSON object a line, each with a "label"), prints a Markdown
table of target, bar, measured figure and verdict, then every point.  Standard library only.
"""

import glob
import json
import os
import sys


def load(directory):
    """Every result object by label."""
    points = {}
    for path in sorted(glob.glob(os.path.join(directory, "*.json"))):
        name = os.path.splitext(os.path.basename(path))[0]
        with open(path) as f:
            for line in f:
                line = line.strip()
                if not line:
                    continue
                try:
                    obj = json.loads(line)
                except ValueError:
                    print(f"summarize.py: {path}: not JSON, skipped", file=sys.stderr)
                    continue
                points[obj.get("label") or name] = obj
    return points


def verdict(ok):
    return "meets" if ok else "**misses**"


def row(target, bar, measured, ok):
    """ok: True, False, None (not measured) or "info" (no bar to meet)."""
    status = "not measured" if ok is None else "(information)" if ok == "info" else verdict(ok)
    return f"| {target} | {bar} | {measured} | {status} |"


def ingest(p):
    out = []
    for label, what in (("ingest-shm", "1 in flight"), ("ingest-shm-d2", "2 in flight")):
        r = p.get(label)
        if not r or not r.get("ratios"):
            continue
        x = r["ratios"]["ingest_over_pinned_h2d"]
        out.append(row(f"large-tensor ingest over shm (64 MiB, {what})", ">= 0.95 x pinned h2d",
                       f"{x:.3f} x ({r['ingest_gb_per_s']:.2f} GB/s in; pinned "
                       f"{r['limits']['pinned_h2d_gbps']:.2f}, registered memfd "
                       f"{r['limits']['registered_h2d_gbps']:.2f}, pageable "
                       f"{r['limits']['pageable_h2d_gbps']:.2f} GB/s)", x >= 0.95))
    return out or [row("large-tensor ingest over shm (64 MiB)", ">= 0.95 x pinned h2d",
                       "no ingest-shm run with --limits (GPU run)", None)]


def small(p):
    r = p.get("small-shm")
    if not r or not r.get("ratios"):
        return row("small request over shm (GPU)", "p50 <= 1.5 x floor, p99 <= 3 x floor",
                   "no small-shm run with --limits (GPU run)", None)
    q = r["ratios"]
    lat, lim = r["latency_us"], r["limits"]
    return row("small request over shm (GPU)", "p50 <= 1.5 x floor, p99 <= 3 x floor",
               f"p50 {lat['p50']:.1f} us = {q['p50_over_floor_p50']:.2f} x, p99 {lat['p99']:.1f} us "
               f"= {q['p99_over_floor_p50']:.2f} x the floor p50 {lim['floor_p50_us']:.1f} us "
               f"(floor p99 {lim['floor_p99_us']:.1f} us)",
               q["p50_over_floor_p50"] <= 1.5 and q["p99_over_floor_p50"] <= 3)


def batching(p):
    one, many = p.get("conc-shm-c1"), p.get("conc-shm-c64")
    bar = "c=64 >= 20 x rows/s of c=1, mean batch >= 16"
    if not one or not many:
        return row("batching (demo MLP, shm)", bar, "no conc-shm-c1 / c64 runs", None)
    x = many["rows_per_s"] / one["rows_per_s"] if one["rows_per_s"] else 0
    mb = (many.get("server") or {}).get("mean_batch")
    mbs = f"{mb:.1f}" if mb is not None else "unknown"
    return row("batching (demo MLP, shm)", bar,
               f"{x:.1f} x ({many['rows_per_s']:.0f} vs {one['rows_per_s']:.0f} rows/s), "
               f"mean batch {mbs}", x >= 20 and mb is not None and mb >= 16)


def http_json(p):
    out = []
    wi, wb, w16 = p.get("wrk-inferd-784"), p.get("wrk-base-784"), p.get("wrk-base-16")
    bar = ">= 0.8 x the bare libmicrohttpd + jansson server"
    if wi and wb:
        x = wi["requests_per_s"] / wb["requests_per_s"] if wb["requests_per_s"] else 0
        errs = sum(wi["errors"].values()) + sum(wb["errors"].values())
        extra = f"; baseline, 16 floats: {w16['requests_per_s']:.0f} req/s" if w16 else ""
        out.append(row("HTTP JSON, wrk (784 floats)", bar,
                       f"{x:.2f} x ({wi['requests_per_s']:.0f} vs {wb['requests_per_s']:.0f} req/s, "
                       f"{errs} errors{extra})", x >= 0.8 and errs == 0))
    else:
        out.append(row("HTTP JSON, wrk (784 floats)", bar, "no wrk runs", None))
    bi, bb = p.get("inferd-http-c16"), p.get("base-http-c16")
    if bi and bb:
        x = bi["requests_per_s"] / bb["requests_per_s"] if bb["requests_per_s"] else 0
        out.append(row("HTTP JSON, inferd-bench c=16", bar,
                       f"{x:.2f} x ({bi['requests_per_s']:.0f} vs {bb['requests_per_s']:.0f} req/s)",
                       x >= 0.8))
    return out + binary(p)


def binary(p):
    """The binary tensor extension against JSON, same model, rows and connections."""
    out = []
    for rows in (1, 64):
        j, b = p.get(f"bin-json-r{rows}"), p.get(f"bin-binary-r{rows}")
        if not j or not b:
            continue
        what = (f"HTTP binary tensor extension ({rows} row{'s' if rows > 1 else ''}/request, "
                f"c={b['concurrency']})")
        x = b["requests_per_s"] / j["requests_per_s"] if j["requests_per_s"] else 0
        errs = j["errors"] + b["errors"]
        out.append(row(what, ">= 5 x JSON req/s",
                       f"{x:.1f} x ({b['requests_per_s']:.0f} vs {j['requests_per_s']:.0f} req/s, "
                       f"{b['rows_per_s']:.0f} vs {j['rows_per_s']:.0f} rows/s, {errs} errors)",
                       x >= 5 and errs == 0))
    return out or [row("HTTP binary tensor extension", ">= 5 x JSON req/s",
                       "no bin-json / bin-binary runs", None)]


def shm_vs_http(p):
    out = []
    for shm, http, what in (("lat-shm", "lat-http", "no batching window"),
                            ("conc-shm-c1", "conc-http-c1", "demo model as shipped")):
        s, h = p.get(shm), p.get(http)
        if not s or not h:
            continue
        x = h["latency_us"]["p50"] / s["latency_us"]["p50"] if s["latency_us"]["p50"] else 0
        out.append(row(f"shm against HTTP p50 ({what})", "HTTP p50 >= 10 x shm p50",
                       f"{x:.1f} x (shm {s['latency_us']['p50']:.1f} us, HTTP "
                       f"{h['latency_us']['p50']:.1f} us)", x >= 10))
    return out or [row("shm against HTTP p50", "HTTP p50 >= 10 x shm p50", "no runs", None)]


def against_torch(p):
    out = []
    for name in ("torch-cpu", "torch-gpu"):
        t = p.get(name)
        if not t:
            continue
        for tr in t["results"]:
            e = p.get(f"engine-r{tr['batch']}")
            if e and t["device"] == "cpu":
                # Like for like: the backend alone against PyTorch's model alone.
                x = e["rows_per_s"] / tr["rows_per_s"]
                out.append(row(f"CPU backend, batch {tr['batch']}", ">= PyTorch CPU rows/s",
                               f"{x:.2f} x ({e['rows_per_s']:.0f} vs {tr['rows_per_s']:.0f} rows/s, "
                               f"{t['threads']} threads)", x >= 1))
            elif e:
                x = e["rows_per_s"] / tr["rows_per_s"]
                out.append(row(f"CUDA backend alone, batch {tr['batch']}", "none",
                               f"{x:.2f} x raw PyTorch CUDA ({e['rows_per_s']:.0f} vs "
                               f"{tr['rows_per_s']:.0f} rows/s; batch p50 {e['batch_us']['p50']:.1f} us)", "info"))
            r = p.get(f"rows-shm-r{tr['batch']}")
            if not r:
                continue
            x = r["rows_per_s"] / tr["rows_per_s"]
            if t["device"] == "cpu":
                out.append(row(f"daemon over shm (end to end), batch {tr['batch']}", "none",
                               f"{x:.2f} x PyTorch's model alone ({r['rows_per_s']:.0f} vs "
                               f"{tr['rows_per_s']:.0f} rows/s)", "info"))
            else:
                wc = tr.get("with_copies_rows_per_s")
                extra = f"; {r['rows_per_s'] / wc:.2f} x PyTorch with its copies" if wc else ""
                out.append(row(f"GPU against PyTorch, batch {tr['batch']}", "none",
                               f"{x:.2f} x raw PyTorch CUDA ({r['rows_per_s']:.0f} vs "
                               f"{tr['rows_per_s']:.0f} rows/s){extra}", "info"))
    return out or [row("CPU backend", ">= PyTorch CPU rows/s", "no torch_peer run", None)]


def overlap(p):
    """Copy/compute overlap: period per request with one client against two."""
    one, two, eng = p.get("overlap-c1"), p.get("overlap-c2"), p.get("engine-wide")
    if not one or not two:
        return []
    compute = f"compute {eng['batch_us']['p50']:.0f} us a batch, " if eng else ""
    return [row("copy/compute overlap (64 MiB in, 256-row batches)", "period near the larger stage, not the sum",
                f"{compute}1 client {1e6 / one['requests_per_s']:.0f} us a request, 2 clients "
                f"{1e6 / two['requests_per_s']:.0f} us ({two['ingest_gb_per_s']:.2f} GB/s in)", "info")]


def steady(p):
    out = []
    m = p.get("metrics-end")
    if m and m.get("allocations_after_startup") is not None:
        a = m["allocations_after_startup"]
        out.append(row("steady state: allocations", "0 after start-up", f"{a}", a == 0))
    i = p.get("idle-cpu")
    if i:
        out.append(row("steady state: idle CPU", "~0%", f"{i['cpu_percent']:.2f}% over "
                       f"{i['seconds']:.1f} s", i["cpu_percent"] < 1))
    return out or [row("steady state", "0 allocations, ~0% idle CPU", "no snapshot", None)]


def points_table(p):
    lines = ["| label | protocol | conc x depth | rows | req/s | rows/s | p50 us | p99 us | "
             "mean batch | errors |", "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for label, r in sorted(p.items()):
        if "latency_us" not in r or "protocol" not in r:
            continue
        mb = (r.get("server") or {}).get("mean_batch")
        lines.append(f"| {label} | {r['protocol']} | {r['concurrency']} x {r['async_depth']} | "
                     f"{r['rows']} | {r['requests_per_s']:.0f} | {r['rows_per_s']:.0f} | "
                     f"{r['latency_us']['p50']:.1f} | {r['latency_us']['p99']:.1f} | "
                     f"{'' if mb is None else f'{mb:.1f}'} | {r['errors']} |")
    return lines


def main():
    if len(sys.argv) != 2:
        print("usage: summarize.py RESULTS_DIR", file=sys.stderr)
        return 2
    p = load(sys.argv[1])
    if not p:
        print(f"summarize.py: no results in {sys.argv[1]}", file=sys.stderr)
        return 1
    lines = ["## Performance targets", "", "| target | bar | measured | verdict |",
             "| --- | --- | --- | --- |"]
    lines += ingest(p) + [small(p), batching(p)]
    lines += http_json(p) + shm_vs_http(p) + against_torch(p) + overlap(p) + steady(p)
    lines += ["", "## Every point", ""] + points_table(p)
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
