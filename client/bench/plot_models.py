#!/usr/bin/env python3
"""plot_models.py: PNG bar charts of the model checks' JSON files (gpu_check_vision.py --json, gpu_e2e_shm.py --json).

    plot_models.py PATH... [--out DIR]

PATH is a JSON file or a directory whose *.json files are read; files of other
tools are passed over.  Written into --out (default: the first PATH's directory):
  models-<model>.png   per model, one panel per precision: median ms per batch
                       of inferd's backend alone, PyTorch eager, PyTorch +
                       CUDA graph (and torch.compile where measured), by batch
  models-ratios.png    PyTorch + CUDA graph time / inferd time for every model,
                       precision and batch (> 1: inferd is faster; the line at 1)
  e2e-shm.png          end to end over shm against the engine alone at the mean
                       batch, images/s (one bar pair per gpu_e2e_shm.py file)

Uses matplotlib when it can be imported; otherwise says so and exits 0 without
plotting.  Exit 1 when a PATH cannot be read or holds nothing to plot.
"""

import argparse
import glob
import json
import os
import sys

PEERS = [("inferd_ms", "inferd (engine alone)", "tab:blue"), ("torch_eager_ms", "PyTorch eager", "tab:orange"),
         ("torch_cudagraph_ms", "PyTorch + CUDA graph", "tab:green"),
         ("torch_compile_ms", "torch.compile", "tab:purple")]
PRECISIONS = {"fp32": "tab:blue", "tf32": "tab:cyan", "fp16": "tab:orange", "bf16": "tab:red"}


def load(paths):
    """(vision and encoder speed rows, e2e records) from the JSON files under paths."""
    files = []
    for p in paths:
        files += sorted(glob.glob(os.path.join(p, "*.json"))) if os.path.isdir(p) else [p]
    rows, e2e = [], []
    for f in files:
        with open(f) as fh:
            doc = json.load(fh)
        if not isinstance(doc, dict):
            continue
        if doc.get("tool") in ("gpu_check_vision", "gpu_check_encoders"):
            for m in doc.get("models", []):
                rows += [dict(r, gpu=doc.get("versions", {}).get("gpu")) for r in m.get("speed", [])]
        elif doc.get("tool") == "gpu_e2e_shm":
            e2e.append(doc)
    return rows, e2e


def plot_model(plt, name, rows, path):
    """One model: a panel per precision, bars per peer at each batch."""
    precisions = sorted({r["precision"] for r in rows}, key=lambda p: (list(PRECISIONS).index(p)
                                                                     if p in PRECISIONS else 9, p))
    fig, axes = plt.subplots(1, len(precisions), figsize=(6 * len(precisions), 4.2), squeeze=False)
    for ax, prec in zip(axes[0], precisions):
        pts = sorted((r for r in rows if r["precision"] == prec), key=lambda r: r["batch"])
        peers = [p for p in PEERS if any(r.get(p[0]) for r in pts)]
        width = 0.8 / max(1, len(peers))
        for i, (key, label, color) in enumerate(peers):
            xs = [j + (i - (len(peers) - 1) / 2) * width for j in range(len(pts))]
            ax.bar(xs, [r.get(key) or 0 for r in pts], width, label=label, color=color)
        ax.set_xticks(range(len(pts)))
        ax.set_xticklabels([f"batch {r['batch']}" for r in pts])
        ax.set_ylabel("median ms per batch (lower is better)")
        ax.set_title(f"{name} {prec} on {pts[0]['device']}")
        ax.legend(fontsize=8)
        ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def plot_ratios(plt, rows, path):
    """PyTorch + CUDA graph time / inferd time for every point that has both."""
    pts = [r for r in rows if r.get("torch_cudagraph_ratio")]
    if not pts:
        return False
    pts.sort(key=lambda r: (r["model"], list(PRECISIONS).index(r["precision"]) if r["precision"] in PRECISIONS
                            else 9, r["batch"]))
    fig, ax = plt.subplots(figsize=(max(6, 0.45 * len(pts) + 2), 4.5))
    ax.bar(range(len(pts)), [r["torch_cudagraph_ratio"] for r in pts],
           color=[PRECISIONS.get(r["precision"], "tab:gray") for r in pts])
    for prec in sorted({r["precision"] for r in pts}):
        ax.bar([0], [0], color=PRECISIONS.get(prec, "tab:gray"), label=prec)
    ax.legend(fontsize=8)
    ax.axhline(1.0, color="black", linewidth=1)
    ax.set_xticks(range(len(pts)))
    ax.set_xticklabels([f"{r['model']} {r['precision']} b{r['batch']}" for r in pts], rotation=70,
                       ha="right", fontsize=8)
    ax.set_ylabel("PyTorch + CUDA graph ms / inferd ms")
    ax.set_title("inferd's backend vs PyTorch + CUDA graph (> 1: inferd faster)", fontsize=10)
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True


def plot_e2e(plt, recs, path):
    """End to end images/s against the engine alone at the mean batch, one pair per run."""
    fig, ax = plt.subplots(figsize=(max(5, 2.5 * len(recs)), 4.2))
    for i, r in enumerate(recs):
        ax.bar(i - 0.2, r["e2e_images_per_s"], 0.4, color="tab:blue", label="end to end (shm)" if i == 0 else None)
        ax.bar(i + 0.2, r["engine_images_per_s"], 0.4, color="tab:green",
               label="engine alone at the mean batch" if i == 0 else None)
        ax.text(i, max(r["e2e_images_per_s"], r["engine_images_per_s"]), f"{r['ratio']:.2f}x", ha="center",
                va="bottom", fontsize=9)
    ax.set_xticks(range(len(recs)))
    ax.set_xticklabels([f"{r['model']} {r['precision']}\n{r['clients']} clients, batch {r['mean_batch']:.1f}"
                        for r in recs], fontsize=8)
    top = max(max(r["e2e_images_per_s"], r["engine_images_per_s"]) for r in recs)
    ax.set_ylim(0, top * 1.35)
    ax.set_ylabel("images/s")
    ax.set_title("end to end over shm against the engine alone")
    ax.legend(fontsize=8, loc="upper right")
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("paths", nargs="+", help="JSON files or directories of them")
    ap.add_argument("--out", default=None, help="where the PNG files go (default: the first path's directory)")
    args = ap.parse_args()
    try:
        rows, e2e = load(args.paths)
    except (OSError, ValueError) as e:
        print(f"plot_models: {e}", file=sys.stderr)
        return 1
    if not rows and not e2e:
        print("plot_models: no gpu_check_vision or gpu_e2e_shm results in " + " ".join(args.paths), file=sys.stderr)
        return 1
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as e:
        print(f"plot_models: matplotlib not available ({e}); no plots made")
        return 0
    first = args.paths[0]
    out = args.out or (first if os.path.isdir(first) else os.path.dirname(os.path.abspath(first)))
    os.makedirs(out, exist_ok=True)
    made = []
    for name in sorted({r["model"] for r in rows}):
        path = os.path.join(out, f"models-{name}.png")
        plot_model(plt, name, [r for r in rows if r["model"] == name], path)
        made.append(path)
    if plot_ratios(plt, rows, os.path.join(out, "models-ratios.png")):
        made.append(os.path.join(out, "models-ratios.png"))
    if e2e:
        plot_e2e(plt, e2e, os.path.join(out, "e2e-shm.png"))
        made.append(os.path.join(out, "e2e-shm.png"))
    print("plot_models: wrote " + ", ".join(made))
    return 0


if __name__ == "__main__":
    sys.exit(main())
