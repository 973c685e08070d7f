#!/usr/bin/env python3
"""targets.py OUTDIR: the shared-memory fast path's target rows, from one run-gpu.sh run.

Reads the points run-gpu.sh's target_points wrote for each copy_mode (t-MODE-c1, -c1-nodelay,
-c64, -http-c1, -ingest) and the device's limits (limits-small, -64k, -1m, -64m), and prints
two markdown tables: every target row per copy_mode with its ratio to the limit measured in the
same run, and what one copy of each size costs by DMA and by the mapped kernel (the basis of
mapped_copy_max_bytes).  Standard library only; a missing point prints as "not measured".
"""

import json
import os
import sys

MODES = ("auto", "dma", "mapped")
LIMIT_SIZES = (("limits-small", "3136 B"), ("limits-64k", "64 KiB"), ("limits-1m", "1 MiB"),
               ("limits-64m", "64 MiB"))


def load(out, label):
    """The JSON point LABEL.json in OUT, or None."""
    path = os.path.join(out, label + ".json")
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def verdict(ok):
    return "-" if ok is None else ("yes" if ok else "**no**")


def row_small(c1):
    """1 client, 1 row, default config: p50 and p99 against the floors of the same run."""
    target = "p50 <= 1.5 x floor, p99 <= 3 x floor p50"
    if c1 is None or not c1.get("limits"):
        return (target, "not measured (needs the point and limits-small)", None)
    lat, lim = c1["latency_us"], c1["limits"]
    p50, p99, floor = lat["p50"], lat["p99"], lim["floor_p50_us"]
    mapped = lim.get("mapped_floor_p50_us") or 0
    text = (f"p50 {p50:.1f} us = {p50 / floor:.2f} x, p99 {p99:.1f} us = {p99 / floor:.2f} x the DMA floor "
            f"{floor:.1f} us")
    if mapped > 0:
        text += f" ({p50 / mapped:.2f} x / {p99 / mapped:.2f} x the mapped floor {mapped:.1f} us)"
    return (target, text, p50 <= 1.5 * floor and p99 <= 3 * floor)


def row_window(c1, nodelay):
    target = "p50 <= 1.2 x"
    if c1 is None or nodelay is None:
        return (target, "not measured", None)
    a, b = c1["latency_us"]["p50"], nodelay["latency_us"]["p50"]
    return (target, f"p50 {a:.1f} us (max_queue_delay_us 200) / {b:.1f} us (0) = {a / b:.2f} x", a <= 1.2 * b)


def row_c64(c64, c1):
    target = ">= 300k rows/s, >= 30 x one client"
    if c64 is None or c1 is None:
        return (target, "not measured", None)
    rows, one = c64["rows_per_s"], c1["rows_per_s"]
    batch = (c64.get("server") or {}).get("mean_batch")
    text = f"{rows / 1e3:.0f}k rows/s"
    if batch:
        text += f" (mean batch {batch:.1f})"
    text += f" = {rows / one:.1f} x one client's {one / 1e3:.1f}k rows/s"
    return (target, text, rows >= 300e3 and rows >= 30 * one)


def row_http(c1, http):
    target = "shm p50 >= 10 x lower"
    if c1 is None or http is None:
        return (target, "not measured", None)
    a, b = c1["latency_us"]["p50"], http["latency_us"]["p50"]
    return (target, f"shm {a:.1f} us, HTTP JSON {b:.1f} us: {b / a:.1f} x lower", b >= 10 * a)


def row_ingest(ingest):
    target = ">= 0.95 x pinned cudaMemcpyAsync"
    if ingest is None or not ingest.get("limits"):
        return (target, "not measured (needs the point and limits-64m)", None)
    lim, gbps = ingest["limits"], ingest["ingest_gb_per_s"]
    pinned = lim["pinned_h2d_gbps"]
    text = (f"{gbps:.2f} GB/s = {gbps / pinned:.3f} x pinned {pinned:.2f} GB/s (registered memfd "
            f"{lim['registered_h2d_gbps']:.2f}, mapped kernel {lim.get('mapped_h2d_gbps', 0):.2f} GB/s)")
    return (target, text, gbps >= 0.95 * pinned)


def target_rows(out):
    """Every target row for every copy mode that has points."""
    lines = ["| copy_mode | what | target | measured | met |", "| --- | --- | --- | --- | --- |"]
    for mode in MODES:
        p = {k: load(out, f"t-{mode}-{k}") for k in ("c1", "c1-nodelay", "c64", "http-c1", "ingest")}
        if all(v is None for v in p.values()):
            continue
        rows = (("1 client, 1 row (3136 B in), default config", row_small(p["c1"])),
                ("default config vs max_queue_delay_us=0, 1 client", row_window(p["c1"], p["c1-nodelay"])),
                ("64 clients, 1 row each", row_c64(p["c64"], p["c1"])),
                ("shm vs HTTP JSON, same request, default config", row_http(p["c1"], p["http-c1"])),
                ("64 MiB input, 1 request in flight", row_ingest(p["ingest"])))
        for what, (target, text, ok) in rows:
            lines.append(f"| {mode} | {what} | {target} | {text} | {verdict(ok)} |")
    return lines


def copy_rows(out):
    """One copy of each size: DMA from pinned and from a registered memfd, and the mapped kernel."""
    lines = ["| bytes | DMA, pinned | DMA, registered memfd | mapped kernel, registered memfd | faster |",
             "| --- | --- | --- | --- | --- |"]
    floors = None
    for label, name in LIMIT_SIZES:
        d = load(out, label)
        if d is None:
            lines.append(f"| {name} | not measured | | | |")
            continue
        lim = d["limits"]
        n = lim["copy_bytes"]
        us = [n / (g * 1e3) if g > 0 else float("inf") for g in
              (lim["pinned_h2d_gbps"], lim["registered_h2d_gbps"], lim.get("mapped_h2d_gbps", 0))]
        cells = [f"{t:.1f} us ({g:.2f} GB/s)" for t, g in
                 zip(us, (lim["pinned_h2d_gbps"], lim["registered_h2d_gbps"], lim.get("mapped_h2d_gbps", 0)))]
        lines.append(f"| {name} | {cells[0]} | {cells[1]} | {cells[2]} | "
                     f"{'mapped' if us[2] < us[1] else 'DMA'} |")
        if label == "limits-small":
            floors = lim
    if floors is not None:
        lines.append("")
        lines.append(f"Floors on {floors['device']}: DMA copy in + op + DMA copy out + sync p50 "
                     f"{floors['floor_p50_us']:.1f} us, p99 {floors['floor_p99_us']:.1f} us; gather kernel + op + "
                     f"scatter kernel + sync p50 {floors.get('mapped_floor_p50_us', 0):.1f} us, p99 "
                     f"{floors.get('mapped_floor_p99_us', 0):.1f} us.")
    return lines


def main():
    if len(sys.argv) != 2:
        print("usage: targets.py OUTDIR", file=sys.stderr)
        return 2
    out = sys.argv[1]
    print("## Shared-memory targets, each copy_mode\n")
    print("\n".join(target_rows(out)))
    print("\n## One copy by DMA and by the mapped kernel (event-timed medians; mapped_copy_max_bytes)\n")
    print("\n".join(copy_rows(out)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
