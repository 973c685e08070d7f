#!/usr/bin/env python3
"""gpu_profile_models.py: where inferd's backend spends a model's time, per op kind, on the GPU.

    gpu_profile_models.py [--build _g] [--device cuda:0] [--runs NAME:PRECISION:ROWS ...]
                          [--reps 10] [--seq 128] [--json PATH] [--workdir DIR]

Each NAME is a model of tests/helpers/onnx_reference.py (resnet50, mobilenetv3,
efficientnet_b0, vit_b_16, bert, distilbert; random weights, its seed), exported
once at opset 17 with dynamic batch (and sequence) axes, served with
model.json {"platform": "onnx", "max_batch_size": the largest ROWS asked for
that model, "precision": PRECISION} (encoders: "max_dims" --seq).  For every
run, inferd-bench-engine --engine=DIR --rows=ROWS --profile=REPS times the
whole batch (a captured graph, as served) and then each step of the plan
uncaptured (the median of REPS), and this prints the share of each op kind
and the slowest nodes.  The sum of the steps exceeds the whole batch by the
launch costs the captured graph removes; the shares show what dominates.

Exit 0 when every run was profiled, 1 when one failed, 77 without torch/onnx
or (for a cuda device) without CUDA in PyTorch.
"""

import argparse
import json
import os
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpu_check_common as gc  # noqa: E402

DEFAULT_RUNS = ["vit_b_16:fp16:64", "vit_b_16:fp32:8", "bert:fp16:8", "bert:fp32:8",
                "resnet50:fp32:1", "resnet50:fp32:64", "efficientnet_b0:fp32:64"]


def export(ref, name, seq, work):
    """Export name once; returns (onnx path, input names, kind)."""
    model, kind, outputs = ref.build(name)
    names, example = ref.make_inputs(kind, 2, 16 if kind[0] != "image" else None, np.random.default_rng(ref.SEED))
    path = os.path.join(work, name, "model.onnx")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    ref.export(model, kind, names, outputs, example, path, 17, False)
    return path, names, kind


def model_dir(work, name, precision, onnx_path, names, kind, max_rows, seq):
    """The model directory of one precision (the ONNX file linked in)."""
    d = os.path.join(work, f"{name}-{precision}")
    os.makedirs(d, exist_ok=True)
    dst = os.path.join(d, "model.onnx")
    if not os.path.exists(dst):
        os.link(onnx_path, dst)
    config = {"platform": "onnx", "max_batch_size": max_rows, "precision": precision}
    if kind[0] != "image":
        config["max_dims"] = {n: [seq] for n in names}
    gc.write_model_dir(d, dst, config)
    return d


def profile(build, d, device, rows, reps):
    """inferd-bench-engine --profile's JSON document for one run."""
    return gc.engine_json(build, d, device, rows, duration=1, warmup=0.3, extra=(f"--profile={reps}",))


def print_profile(name, precision, rows, prof):
    """The run's op kinds by share and its slowest nodes, from the bench's JSON."""
    p = prof["profile"]
    print(f"== {name} {precision} rows {rows}: whole batch {p['whole_us'] / 1e3:.3f} ms (captured), "
          f"steps uncaptured {p['sum_us'] / 1e3:.3f} ms over {p['steps']} steps")
    for o in p["ops"]:
        print(f"   {o['op']:<18} {o['how']:<12} {o['us'] / 1e3:9.3f} ms  x{o['count']:<4} {100 * o['share']:5.1f} %")
    for n in p["top_nodes"][:8]:
        print(f"   top: {n['node'][-60:]:<60} {n['op']:<12} {n['us'] / 1e3:8.3f} ms {100 * n['share']:5.1f} %")


def parse_runs(runs):
    """NAME:PRECISION:ROWS triples."""
    out = []
    for r in runs:
        try:
            name, precision, rows = r.split(":")
            out.append((name, precision, int(rows)))
        except ValueError:
            raise SystemExit(f"--runs: {r}: expected NAME:PRECISION:ROWS")
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    gc.add_common_args(ap)
    ap.add_argument("--runs", nargs="+", default=DEFAULT_RUNS, help="NAME:PRECISION:ROWS (default: %(default)s)")
    ap.add_argument("--reps", type=int, default=10, help="profiles per run, the median taken (default 10)")
    ap.add_argument("--seq", type=int, default=128, help="the encoders' sequence length (default 128)")
    ap.add_argument("--json", help="write every run's profile here")
    args = ap.parse_args()
    gc.need_modules("torch", "onnx")
    ref = gc.load_module("onnx_reference", "tests/helpers/onnx_reference.py")
    runs = parse_runs(args.runs)
    work = args.workdir or tempfile.mkdtemp(prefix="gpu_profile_models.")
    exported, doc, failed = {}, {"device": args.device, "runs": []}, 0
    for name, precision, rows in runs:
        try:
            if name not in exported:
                exported[name] = export(ref, name, args.seq, work)
            path, names, kind = exported[name]
            max_rows = max(r for n, _, r in runs if n == name)
            d = model_dir(work, name, precision, path, names, kind, max_rows, args.seq)
            prof = profile(args.build, d, args.device, rows, args.reps)
        except (RuntimeError, OSError) as e:
            print(f"{name} {precision} rows {rows}: FAILED: {e}")
            failed += 1
            continue
        print_profile(name, precision, rows, prof)
        doc["runs"].append({"model": name, "precision": precision, "rows": rows, "bench": prof})
        if args.json:
            with open(args.json, "w") as f:
                json.dump(doc, f, indent=1)
    print(f"gpu_profile_models: {len(runs) - failed} of {len(runs)} runs profiled")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
