#!/usr/bin/env python3
"""plot.py: PNG plots of a results directory of inferd-bench --json files (run-cpu.sh / run-gpu.sh).

    plot.py RESULTS_DIR [--out DIR]

latency-vs-concurrency.png   p50 and p99 against connections, shm and HTTP (conc-* points)
throughput-vs-batch.png      rows/s against rows per request, shm and HTTP (rows-* points),
                             with PyTorch's raw model (torch-*.json) when present

Uses matplotlib when it can be imported; otherwise says so and exits 0 without plotting.
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import summarize  # noqa: E402  (the results loader)


def series(points, prefix, key):
    """{protocol: [(x, result)]} of the points whose label starts with prefix, sorted by x."""
    out = {}
    for label, r in points.items():
        if label.startswith(prefix) and "protocol" in r:
            out.setdefault(r["protocol"], []).append((r[key], r))
    return {k: sorted(v, key=lambda t: t[0]) for k, v in out.items()}


def plot_latency(plt, points, path):
    s = series(points, "conc-", "concurrency")
    if not s:
        return False
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for proto, pts in sorted(s.items()):
        xs = [x for x, _ in pts]
        ax.plot(xs, [r["latency_us"]["p50"] for _, r in pts], marker="o", label=f"{proto} p50")
        ax.plot(xs, [r["latency_us"]["p99"] for _, r in pts], marker="x", linestyle="--",
                label=f"{proto} p99")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("concurrent connections (1 row a request)")
    ax.set_ylabel("latency (µs)")
    ax.set_title("inferd latency against concurrency")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True


def plot_throughput(plt, points, path):
    s = series(points, "rows-", "rows")
    if not s:
        return False
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for proto, pts in sorted(s.items()):
        ax.plot([x for x, _ in pts], [r["rows_per_s"] for _, r in pts], marker="o",
                label=f"inferd {proto}")
    for name in ("torch-cpu", "torch-gpu"):
        t = points.get(name)
        if t:
            res = t["results"]
            ax.plot([r["batch"] for r in res], [r["rows_per_s"] for r in res], marker="s",
                    linestyle=":", label=f"PyTorch {t['device']} (raw model)")
            if res and "with_copies_rows_per_s" in res[0]:
                ax.plot([r["batch"] for r in res], [r["with_copies_rows_per_s"] for r in res],
                        marker="^", linestyle=":", label=f"PyTorch {t['device']} with copies")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("rows per request (= batch size)")
    ax.set_ylabel("rows/s")
    ax.set_title("throughput against batch size (1 client)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("results")
    ap.add_argument("--out", help="where the PNGs go (default: the results directory)")
    args = ap.parse_args()
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("plot.py: matplotlib is not installed (Debian: python3-matplotlib); no plots made",
              file=sys.stderr)
        return 0
    points = summarize.load(args.results)
    out = args.out or args.results
    os.makedirs(out, exist_ok=True)
    made = []
    for fn, name in ((plot_latency, "latency-vs-concurrency.png"),
                     (plot_throughput, "throughput-vs-batch.png")):
        if fn(plt, points, os.path.join(out, name)):
            made.append(name)
    print(f"plot.py: wrote {', '.join(made) if made else 'nothing (no conc-/rows- points)'} in {out}",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
