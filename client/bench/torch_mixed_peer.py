#!/usr/bin/env python3
"""torch_mixed_peer.py: PyTorch's side of the mixed-length benchmark (inferd-bench-mix's peer).

A transformers BertModel (a HuggingFace config name with --config, else BertConfig()'s BERT-base
shape; random weights either way, the default attention implementation) runs --batches batches of
16 requests, each request one sequence of a length uniform in --lengths (the same distribution
inferd-bench-mix sends), each batch padded to its longest with attention_mask zeros on the padding:

    torch_mixed_peer.py --device cuda --fp16 --lengths 16:256 --batches 200 --json
    torch_mixed_peer.py --device cpu --lengths 16:64 --batches 5

Timed with CUDA events on cuda (perf_counter on cpu) around each forward pass, the inputs already
on the device.  Reports served rows/s (requests over the summed pass times) and the per-batch
latency p50/p90/p99/max, after --warmup untimed batches.
"""

import argparse
import json
import sys
import time


def parse_lengths(text):
    """LO:HI as two ints, LO <= HI."""
    lo, _, hi = text.partition(":")
    lo, hi = int(lo), int(hi)
    if not 1 <= lo <= hi:
        raise argparse.ArgumentTypeError("--lengths must be LO:HI with 1 <= LO <= HI")
    return lo, hi


def build_model(args, torch):
    """BertModel with random weights in eval mode, on the device, fp16 if asked."""
    from transformers import BertConfig, BertModel

    cfg = BertConfig.from_pretrained(args.config) if args.config else BertConfig()
    if args.max_len > cfg.max_position_embeddings:
        sys.exit("torch_mixed_peer: --lengths reach %d, past the config's %d positions" %
                 (args.max_len, cfg.max_position_embeddings))
    torch.manual_seed(0)
    model = BertModel(cfg).eval().to(args.device)
    if args.fp16:
        model = model.half()
    return model, cfg.vocab_size


def make_batch(torch, gen, lo, hi, vocab, rows, device):
    """rows requests of random lengths, padded to the longest: (input_ids, attention_mask, token_type_ids)."""
    lens = torch.randint(lo, hi + 1, (rows,), generator=gen)
    t = int(lens.max())
    ids = torch.randint(0, vocab, (rows, t), generator=gen)
    mask = (torch.arange(t)[None, :] < lens[:, None]).long()
    ids = ids * mask
    return ids.to(device), mask.to(device), torch.zeros_like(ids).to(device)


def time_batch(torch, model, batch, cuda):
    """Seconds one forward pass of batch takes."""
    ids, mask, types = batch
    with torch.inference_mode():
        if cuda:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            model(input_ids=ids, attention_mask=mask, token_type_ids=types)
            end.record()
            end.synchronize()
            return start.elapsed_time(end) / 1e3
        t0 = time.perf_counter()
        model(input_ids=ids, attention_mask=mask, token_type_ids=types)
        return time.perf_counter() - t0


def quantile(sorted_v, q):
    """The q-quantile of a sorted list (nearest rank)."""
    return sorted_v[min(len(sorted_v) - 1, max(0, int(round(q * len(sorted_v) + 0.5)) - 1))]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default=None, help="cuda or cpu (default: cuda when available)")
    ap.add_argument("--lengths", type=parse_lengths, default=(16, 256), help="LO:HI (default 16:256)")
    ap.add_argument("--batches", type=int, default=100, help="timed batches (default 100)")
    ap.add_argument("--warmup", type=int, default=10, help="untimed batches first (default 10)")
    ap.add_argument("--batch-size", type=int, default=16, help="requests per batch (default 16)")
    ap.add_argument("--fp16", action="store_true", help="half precision (default on cuda)")
    ap.add_argument("--fp32", action="store_true", help="full precision even on cuda")
    ap.add_argument("--config", default=None, help="a HuggingFace config name (default BertConfig())")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    args = ap.parse_args()
    try:
        import torch
    except ImportError as e:
        sys.exit("torch_mixed_peer: cannot import torch (%s)" % e)
    if args.device is None:
        args.device = "cuda" if torch.cuda.is_available() else "cpu"
    cuda = args.device.startswith("cuda")
    args.fp16 = (args.fp16 or cuda) and not args.fp32
    if args.fp16 and not cuda:
        sys.exit("torch_mixed_peer: --fp16 needs --device cuda")
    if args.batches < 1 or args.batch_size < 1:
        sys.exit("torch_mixed_peer: --batches and --batch-size must be at least 1")
    lo, hi = args.lengths
    args.max_len = hi
    model, vocab = build_model(args, torch)
    gen = torch.Generator().manual_seed(args.seed)
    for _ in range(args.warmup):
        time_batch(torch, model, make_batch(torch, gen, lo, hi, vocab, args.batch_size, args.device), cuda)
    times = [time_batch(torch, model, make_batch(torch, gen, lo, hi, vocab, args.batch_size, args.device), cuda)
             for _ in range(args.batches)]
    s = sorted(times)
    res = {
        "peer": "torch", "torch": torch.__version__, "device": args.device,
        "gpu": torch.cuda.get_device_name() if cuda else None,
        "precision": "fp16" if args.fp16 else "fp32",
        "attention": getattr(model.config, "_attn_implementation", "eager"),
        "batch_size": args.batch_size, "len_lo": lo, "len_hi": hi, "batches": args.batches,
        "rows_per_s": args.batch_size * len(times) / sum(times),
        "batch_ms": {"p50": quantile(s, 0.5) * 1e3, "p90": quantile(s, 0.9) * 1e3,
                     "p99": quantile(s, 0.99) * 1e3, "max": s[-1] * 1e3},
    }
    if args.json:
        print(json.dumps(res))
    else:
        print("torch %s %s %s (%s attention), batches of %d, lengths %d..%d, %d batches" % (
            res["torch"], res["device"], res["precision"], res["attention"], args.batch_size, lo, hi,
            args.batches))
        print("served rows/s %.1f" % res["rows_per_s"])
        print("batch latency ms: p50 %.3f  p90 %.3f  p99 %.3f  max %.3f" % tuple(
            res["batch_ms"][k] for k in ("p50", "p90", "p99", "max")))


if __name__ == "__main__":
    main()
