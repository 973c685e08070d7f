#!/usr/bin/env python3
"""onnx_reference.py: export a model to ONNX with random weights and write
reference inputs and outputs from onnxruntime and PyTorch for the C tests.

    onnx_reference.py --out DIR --model NAME [--opset 13|17] [--batch N ...]
                      [--seq N] [--bn keep|fold] [--threads T]

Models (random weights, fixed seed, eval mode; BatchNorm running statistics and
the affine parameters of BatchNorm/LayerNorm randomised so that folding them is
actually tested):
  CPU issue: lenet5, resnet18, mobilenetv2, transformer, transformer_mask,
             transformer_fmask, vit_tiny, googlenet (torchvision, 96 px: its
             channel Concats of Conv outputs), bert_heads (a 2-layer BERT-style
             encoder whose attention is written as transformers' eager BERT
             writes it: per-head views transposed, K^T, scale, extended mask)
  GPU issue: resnet50, mobilenetv3 (torchvision mobilenet_v3_small),
             efficientnet_b0, vit_b_16 (head re-initialised, torchvision zeroes
             it), bert, distilbert (only where `transformers` imports)
The transformer is Embedding(1000, 64) + a 2-layer nn.TransformerEncoder
(d_model 64, 4 heads, feed-forward 128, batch_first); its input "tokens" is
INT64 [N,S].  transformer_mask adds "padding_mask" BOOL [N,S] (true = padded
key), transformer_fmask adds "padding_mask" FP32 [N,S] (0 = keep, -1e9 =
padded; added to the attention scores).  Batch and sequence are dynamic.

The graph is exported at a batch size (and sequence length) that is not among
the requested ones, so the references check the dynamic axes.  Exit status:
0 written, 1 error (including onnxruntime and PyTorch disagreeing beyond
10x the tolerance below), 77 a needed Python module is missing.

Files written under DIR/NAME/:
  model.onnx
  manifest.json
  b<B>[_s<S>]/<tensor>.bin         one input tensor per file
  b<B>[_s<S>]/<tensor>.ort.bin     one output tensor, from onnxruntime
  b<B>[_s<S>]/<tensor>.torch.bin   the same output, from PyTorch
Every .bin file is the tensor's elements, row-major, little-endian, nothing
else: FP32 4 bytes, FP16 2, INT64 8, INT32 4, INT8/UINT8 1, BOOL 1 byte (0/1).

manifest.json (read by the C tests with jansson):
{
  "model": "resnet18",              NAME
  "onnx": "model.onnx",             graph file, relative to the manifest
  "opset": 17,
  "seed": 0,
  "batchnorm": "keep",              "keep": BatchNormalization nodes left in
                                    the graph (TrainingMode.PRESERVE export of
                                    the eval model); "fold": folded by torch
  "op_counts": {"Add": 8, "BatchNormalization": 20, ...}   nodes per op type
  "export_batch": 2,                batch size the graph was traced with
  "export_seq": 16,                 sequence length traced with, or null
  "inputs":  [ {"name": "input",  "datatype": "FP32", "dims": [-1, 3, 224, 224]} ],
  "outputs": [ {"name": "output", "datatype": "FP32", "dims": [-1, 1000]} ],
                                    as in the graph; -1 = symbolic dim
  "tolerance": {"rtol": 1e-4, "atol_scale": 1e-5,
                "rule": "|got - want| <= atol + rtol * |want|, atol = atol_scale * max|want|"},
  "cases": [
    { "batch": 1, "seq": null,      seq null for models without one
      "dir": "b1",                  relative to the manifest
      "inputs": [ {"name": "input", "datatype": "FP32", "shape": [1, 3, 224, 224],
                   "file": "b1/input.bin"} ],
      "outputs": [ {"name": "output", "datatype": "FP32", "shape": [1, 1000],
                    "ort_file": "b1/output.ort.bin",
                    "torch_file": "b1/output.torch.bin",
                    "max_abs": 3.2,            max|y| of the PyTorch output
                    "atol": 3.2e-05,           atol_scale * max_abs
                    "rtol": 1e-4,
                    "max_abs_diff_ort_torch": 1.9e-06,
                    "ort_torch_within_tolerance": true} ] } ]
}
The datatype names are the KServe ones inferd uses (FP32, INT64, BOOL, ...).
"""

import argparse
import inspect
import json
import math
import os
import sys

import numpy as np

SEED = 0
RTOL = 1e-4
ATOL_SCALE = 1e-5
HARD_FACTOR = 10.0
EXIT_SKIP = 77

DATATYPES = {np.dtype(np.float32): "FP32", np.dtype(np.float16): "FP16",
             np.dtype(np.int64): "INT64", np.dtype(np.int32): "INT32",
             np.dtype(np.int8): "INT8", np.dtype(np.uint8): "UINT8",
             np.dtype(np.bool_): "BOOL"}
ONNX_DATATYPES = {1: "FP32", 2: "UINT8", 3: "INT8", 6: "INT32", 7: "INT64",
                  9: "BOOL", 10: "FP16"}

try:
    import torch
    from torch import nn
    import torch.nn.functional as F
except ImportError as e:
    print(f"onnx_reference.py: skipped, cannot import torch: {e}", file=sys.stderr)
    sys.exit(EXIT_SKIP)


# ---------------------------------------------------------------- models


class LeNet5(nn.Module):
    """LeNet-5 on [N,1,32,32]: two conv/avg-pool stages and three linear layers."""

    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 6, 5), nn.Tanh(), nn.AvgPool2d(2),
            nn.Conv2d(6, 16, 5), nn.Tanh(), nn.AvgPool2d(2))
        self.classifier = nn.Sequential(
            nn.Flatten(), nn.Linear(16 * 5 * 5, 120), nn.ReLU(),
            nn.Linear(120, 84), nn.ReLU(), nn.Linear(84, 10))

    def forward(self, x):
        return self.classifier(self.features(x))


def attention_mask_add(scores, mask):
    """Apply a mask to attention scores [N, H, S, S]: a BOOL mask (true =
    masked) fills -inf, a float one is added (as nn.MultiheadAttention)."""
    if mask is None:
        return scores
    if mask.dtype == torch.bool:
        return scores.masked_fill(mask, float("-inf"))
    return scores + mask


class ExportableEncoderLayer(nn.TransformerEncoderLayer):
    """nn.TransformerEncoderLayer with its self-attention written out.

    PyTorch 2.x computes nn.MultiheadAttention with
    aten::scaled_dot_product_attention, which the TorchScript exporter cannot
    write at opset 13 (and its need_weights path bakes the export's shapes
    into Reshapes).  This layer keeps nn.MultiheadAttention's parameters
    (in_proj_weight/in_proj_bias, out_proj) and semantics (scaled dot
    product per head, key padding mask, dropout only in training) but writes
    the attention as MatMul, Softmax, MatMul with shapes taken from the input,
    so every PyTorch version exports the same graph at every opset.
    """

    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal=False):
        mha = self.self_attn
        n, s, d = x.shape
        h = mha.num_heads
        qkv = F.linear(x, mha.in_proj_weight, mha.in_proj_bias)
        q, k, v = qkv.reshape(n, s, 3, h, d // h).permute(2, 0, 3, 1, 4).unbind(0)
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(d // h)
        if attn_mask is not None:
            scores = attention_mask_add(scores, attn_mask)
        if key_padding_mask is not None:
            scores = attention_mask_add(scores, key_padding_mask[:, None, None, :])
        att = F.dropout(torch.softmax(scores, dim=-1), mha.dropout, self.training)
        y = (att @ v).transpose(1, 2).reshape(n, s, d)
        return self.dropout1(mha.out_proj(y))


class TokenEncoder(nn.Module):
    """Embedding + 2-layer nn.TransformerEncoder; optional key padding mask."""

    def __init__(self, vocab=1000, d_model=64, heads=4, ff=128, layers=2):
        super().__init__()
        self.embed = nn.Embedding(vocab, d_model)
        layer = ExportableEncoderLayer(d_model, heads, ff, dropout=0.1,
                                       batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers,
                                             enable_nested_tensor=False)

    def forward(self, tokens, padding_mask=None):
        return self.encoder(self.embed(tokens),
                            src_key_padding_mask=padding_mask)


class ViTBlock(nn.Module):
    """Pre-norm transformer block: attention written out, GELU MLP."""

    def __init__(self, dim, heads, mlp):
        super().__init__()
        self.heads = heads
        self.norm1 = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, mlp), nn.GELU(),
                                 nn.Linear(mlp, dim))

    def forward(self, x):
        n, t, d = x.shape
        hd = d // self.heads
        qkv = self.qkv(self.norm1(x)).reshape(n, t, 3, self.heads, hd)
        q, k, v = qkv.permute(2, 0, 3, 1, 4).unbind(0)
        att = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(hd), dim=-1)
        y = (att @ v).transpose(1, 2).reshape(n, t, d)
        x = x + self.proj(y)
        return x + self.mlp(self.norm2(x))


class HeadsSelfAttention(nn.Module):
    """Self-attention as transformers' eager BertSelfAttention writes it:
    Q, K and V projections viewed [N, S, H, D] and transposed to the heads,
    scores against K transposed, divided by sqrt(D), plus the extended
    additive mask, softmax, times V, transposed back and reshaped."""

    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.query = nn.Linear(dim, dim)
        self.key = nn.Linear(dim, dim)
        self.value = nn.Linear(dim, dim)
        self.out = nn.Linear(dim, dim)

    def split(self, x):
        n, s, d = x.shape
        return x.view(n, s, self.heads, d // self.heads).transpose(1, 2)

    def forward(self, x, ext_mask):
        n, s, d = x.shape
        q, k, v = self.split(self.query(x)), self.split(self.key(x)), self.split(self.value(x))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(d // self.heads)
        probs = torch.softmax(scores + ext_mask, dim=-1)
        y = torch.matmul(probs, v).transpose(1, 2).contiguous()
        return self.out(y.view(n, s, d))


class HeadsEncoder(nn.Module):
    """Embedding + 2 post-norm BERT layers (HeadsSelfAttention, GELU MLP);
    (input_ids, attention_mask of 1 = keep, 0 = padded) as BERT takes them."""

    def __init__(self, vocab=1000, dim=64, heads=4, mlp=128, layers=2):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.attn = nn.ModuleList([HeadsSelfAttention(dim, heads) for _ in range(layers)])
        self.norm1 = nn.ModuleList([nn.LayerNorm(dim) for _ in range(layers)])
        self.mlp = nn.ModuleList([nn.Sequential(nn.Linear(dim, mlp), nn.GELU(), nn.Linear(mlp, dim))
                                  for _ in range(layers)])
        self.norm2 = nn.ModuleList([nn.LayerNorm(dim) for _ in range(layers)])

    def forward(self, input_ids, attention_mask):
        ext = (1.0 - attention_mask[:, None, None, :].to(torch.float32)) * -10000.0
        x = self.embed(input_ids)
        for a, n1, m, n2 in zip(self.attn, self.norm1, self.mlp, self.norm2):
            x = n1(x + a(x, ext))
            x = n2(x + m(x))
        return x


class TinyViT(nn.Module):
    """ViT on [N,3,32,32]: 4x4 patches, cls token, 2 blocks, LayerNorm, head."""

    def __init__(self, dim=64, heads=4, mlp=128, depth=2, classes=10):
        super().__init__()
        self.patch = nn.Conv2d(3, dim, 4, stride=4)
        self.cls = nn.Parameter(torch.randn(1, 1, dim) * 0.02)
        self.pos = nn.Parameter(torch.randn(1, 65, dim) * 0.02)
        self.blocks = nn.Sequential(*[ViTBlock(dim, heads, mlp)
                                      for _ in range(depth)])
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, classes)

    def forward(self, x):
        p = self.patch(x).flatten(2).transpose(1, 2)
        cls = self.cls.expand(p.shape[0], -1, -1)
        x = torch.cat([cls, p], dim=1) + self.pos
        x = self.norm(self.blocks(x))
        return self.head(x[:, 0])


def torchvision_model(name):
    """A torchvision classifier with random weights (no download)."""
    try:
        import torchvision
    except ImportError as e:
        skip(f"cannot import torchvision: {e}")
    ctor = getattr(torchvision.models, name, None)
    if ctor is None:
        skip(f"torchvision {torchvision.__version__} has no {name}")
    model = ctor(weights=None)
    if name == "vit_b_16":
        nn.init.normal_(model.heads.head.weight, std=0.02)
        nn.init.normal_(model.heads.head.bias, std=0.02)
    return model


def hf_model(name, for_export):
    """A transformers BERT-base or DistilBERT encoder from its config.

    For export the attention is the plain ("eager") one, which every opset
    from 13 exports; PyTorch timed as a peer keeps its default (SDPA).
    """
    try:
        import transformers
    except ImportError as e:
        skip(f"cannot import transformers: {e}")
    kwargs = {"attn_implementation": "eager"} if for_export else {}
    if name == "bert":
        cfg = transformers.BertConfig(**kwargs)
        model = transformers.BertModel(cfg, add_pooling_layer=False)
    else:
        cfg = transformers.DistilBertConfig(**kwargs)
        model = transformers.DistilBertModel(cfg)
    return HFEncoder(model)


class HFEncoder(nn.Module):
    """Wrap a transformers encoder: (ids, mask) -> last hidden state only."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids, attention_mask):
        return self.model(input_ids=input_ids,
                          attention_mask=attention_mask).last_hidden_state


# Per model: constructor, input kind, output names.  Input kinds:
# ("image", channels, side), ("tokens", mask: None | "bool" | "float"),
# ("hf", vocabulary size).
SPECS = {
    "lenet5":            (LeNet5, ("image", 1, 32), ["logits"]),
    "resnet18":          (lambda: torchvision_model("resnet18"), ("image", 3, 224), ["logits"]),
    "mobilenetv2":       (lambda: torchvision_model("mobilenet_v2"), ("image", 3, 224), ["logits"]),
    "googlenet":         (lambda: torchvision_model("googlenet"), ("image", 3, 96), ["logits"]),
    "transformer":       (TokenEncoder, ("tokens", None), ["hidden"]),
    "transformer_mask":  (TokenEncoder, ("tokens", "bool"), ["hidden"]),
    "transformer_fmask": (TokenEncoder, ("tokens", "float"), ["hidden"]),
    "vit_tiny":          (TinyViT, ("image", 3, 32), ["logits"]),
    "resnet50":          (lambda: torchvision_model("resnet50"), ("image", 3, 224), ["logits"]),
    "mobilenetv3":       (lambda: torchvision_model("mobilenet_v3_small"), ("image", 3, 224), ["logits"]),
    "efficientnet_b0":   (lambda: torchvision_model("efficientnet_b0"), ("image", 3, 224), ["logits"]),
    "vit_b_16":          (lambda: torchvision_model("vit_b_16"), ("image", 3, 224), ["logits"]),
    "bert_heads":        (HeadsEncoder, ("hf", 1000), ["hidden"]),
    "bert":              (lambda e: hf_model("bert", e), ("hf", 30522), ["last_hidden_state"]),
    "distilbert":        (lambda e: hf_model("distilbert", e), ("hf", 30522), ["last_hidden_state"]),
}
DEFAULT_SEQ = {"tokens": 24, "hf": 128}


def skip(message):
    """Exit with the automake skip status and a message."""
    print(f"onnx_reference.py: skipped: {message}", file=sys.stderr)
    sys.exit(EXIT_SKIP)


def randomise_norms(model, gen):
    """Random BatchNorm statistics and norm affine parameters (fixed seed)."""
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.modules.batchnorm._BatchNorm):
                m.running_mean.copy_(torch.randn(m.running_mean.shape, generator=gen) * 0.1)
                m.running_var.copy_(torch.rand(m.running_var.shape, generator=gen) * 1.5 + 0.5)
            if isinstance(m, (nn.modules.batchnorm._BatchNorm, nn.LayerNorm)):
                if getattr(m, "weight", None) is not None:
                    m.weight.copy_(torch.rand(m.weight.shape, generator=gen) * 1.0 + 0.5)
                if getattr(m, "bias", None) is not None:
                    m.bias.copy_(torch.randn(m.bias.shape, generator=gen) * 0.1)


# ---------------------------------------------------------------- inputs


def make_inputs(kind, batch, seq, rng):
    """Named numpy inputs for one case: (names, arrays)."""
    if kind[0] == "image":
        _, ch, hw = kind
        return ["input"], [rng.standard_normal((batch, ch, hw, hw)).astype(np.float32)]
    vocab = 1000 if kind[0] == "tokens" else kind[1]
    tokens = rng.integers(0, vocab, size=(batch, seq), dtype=np.int64)
    # Each row keeps a random prefix (at least one key) and pads the rest;
    # row 0 is never padded so a full-length row is always covered.
    lengths = rng.integers(1, seq + 1, size=batch)
    lengths[0] = seq
    keep = np.arange(seq)[None, :] < lengths[:, None]
    if kind[0] == "hf":
        return ["input_ids", "attention_mask"], [tokens, keep.astype(np.int64)]
    if kind[1] is None:
        return ["tokens"], [tokens]
    if kind[1] == "bool":
        return ["tokens", "padding_mask"], [tokens, ~keep]
    fmask = np.where(keep, 0.0, -1e9).astype(np.float32)
    return ["tokens", "padding_mask"], [tokens, fmask]


def has_seq(kind):
    """Whether the model takes a sequence axis."""
    return kind[0] in ("tokens", "hf")


# ---------------------------------------------------------------- export


def export(model, kind, names, outputs, example, path, opset, keep_bn):
    """torch.onnx.export with dynamic batch (and sequence) axes, grad enabled.

    Exporting nn.TransformerEncoder under no_grad in eval mode reaches fused
    kernels that have no ONNX form; grad stays enabled here on purpose.
    keep_bn exports in TrainingMode.PRESERVE (the model is in eval mode, so
    the graph computes inference): the exporter then leaves
    BatchNormalization nodes for the importer to fold instead of folding
    them into the Conv weights itself as TrainingMode.EVAL does.
    """
    axes = {}
    for n in names:
        axes[n] = {0: "N", 1: "S"} if has_seq(kind) else {0: "N"}
    for n in outputs:
        axes[n] = {0: "N", 1: "S"} if has_seq(kind) else {0: "N"}
    kwargs = {"training": torch.onnx.TrainingMode.PRESERVE if keep_bn
              else torch.onnx.TrainingMode.EVAL}
    if "dynamo" in inspect.signature(torch.onnx.export).parameters:
        kwargs["dynamo"] = False
    with torch.enable_grad():
        torch.onnx.export(model, tuple(torch.from_numpy(a) for a in example),
                          path, opset_version=opset, input_names=names,
                          output_names=outputs, dynamic_axes=axes,
                          do_constant_folding=True, **kwargs)


def graph_io(path):
    """Inputs and outputs of the exported graph as manifest entries, and
    the count of nodes per op type."""
    import onnx
    model = onnx.load(path, load_external_data=False)

    def entry(v):
        t = v.type.tensor_type
        dims = [d.dim_value if d.HasField("dim_value") else -1 for d in t.shape.dim]
        return {"name": v.name, "datatype": ONNX_DATATYPES.get(t.elem_type, str(t.elem_type)),
                "dims": dims}
    inits = {i.name for i in model.graph.initializer}
    ops = {}
    for node in model.graph.node:
        ops[node.op_type] = ops.get(node.op_type, 0) + 1
    return ([entry(v) for v in model.graph.input if v.name not in inits],
            [entry(v) for v in model.graph.output], dict(sorted(ops.items())))


# ---------------------------------------------------------------- references


def write_bin(path, array):
    """Write a tensor's elements row-major little-endian, nothing else."""
    a = np.ascontiguousarray(array)
    if a.dtype == np.bool_:
        a = a.astype(np.uint8)
    elif a.dtype.byteorder == ">":
        a = a.astype(a.dtype.newbyteorder("<"))
    with open(path, "wb") as f:
        f.write(a.tobytes())


def run_torch(model, arrays):
    """PyTorch outputs (eval, no_grad) as a list of numpy arrays."""
    with torch.no_grad():
        out = model(*[torch.from_numpy(a) for a in arrays])
    if isinstance(out, torch.Tensor):
        out = [out]
    return [o.detach().numpy() for o in out]


def compare(ort_out, torch_out):
    """Tolerance fields for one output, with ort checked against torch."""
    want = torch_out.astype(np.float64)
    got = ort_out.astype(np.float64)
    max_abs = float(np.abs(want).max()) if want.size else 0.0
    atol = ATOL_SCALE * max_abs
    diff = np.abs(got - want)
    max_diff = float(diff.max()) if diff.size else 0.0
    bound = atol + RTOL * np.abs(want)
    return {"max_abs": max_abs, "atol": atol, "rtol": RTOL,
            "max_abs_diff_ort_torch": max_diff,
            "ort_torch_within_tolerance": bool(np.all(diff <= bound))}, \
        bool(np.all(diff <= HARD_FACTOR * bound))


def run_case(root, model, sess, kind, outputs, batch, seq, rng):
    """Write one case's inputs and both references; returns (entry, ok)."""
    names, arrays = make_inputs(kind, batch, seq, rng)
    sub = f"b{batch}" + (f"_s{seq}" if has_seq(kind) else "")
    os.makedirs(os.path.join(root, sub), exist_ok=True)
    case = {"batch": batch, "seq": seq if has_seq(kind) else None, "dir": sub,
            "inputs": [], "outputs": []}
    for n, a in zip(names, arrays):
        rel = f"{sub}/{n}.bin"
        write_bin(os.path.join(root, rel), a)
        case["inputs"].append({"name": n, "datatype": DATATYPES[a.dtype],
                               "shape": list(a.shape), "file": rel})
    ort_outs = sess.run(outputs, dict(zip(names, arrays)))
    torch_outs = run_torch(model, arrays)
    ok = True
    for n, o, t in zip(outputs, ort_outs, torch_outs):
        if o.shape != t.shape:
            raise SystemExit(f"{n}: onnxruntime shape {o.shape} != PyTorch {t.shape}")
        if not (np.all(np.isfinite(o)) and np.all(np.isfinite(t))):
            raise SystemExit(f"{sub}/{n}: non-finite values in the reference")
        fields, agree = compare(o, t)
        ok = ok and agree
        entry = {"name": n, "datatype": DATATYPES[t.dtype], "shape": list(t.shape),
                 "ort_file": f"{sub}/{n}.ort.bin", "torch_file": f"{sub}/{n}.torch.bin"}
        entry.update(fields)
        write_bin(os.path.join(root, entry["ort_file"]), o)
        write_bin(os.path.join(root, entry["torch_file"]), t)
        case["outputs"].append(entry)
        print(f"{os.path.basename(root)} {sub} {n} {list(t.shape)}: "
              f"max|y| {fields['max_abs']:.3g}  max|ort-torch| "
              f"{fields['max_abs_diff_ort_torch']:.3g}  within tolerance "
              f"{fields['ort_torch_within_tolerance']}")
    return case, ok


def first_not_in(candidates, taken):
    """The first candidate value not in taken."""
    for c in candidates:
        if c not in taken:
            return c
    raise SystemExit("no export size left")


def build(name, for_export=True):
    """The model in eval mode with its seeded random parameters."""
    ctor, kind, outputs = SPECS[name]
    torch.manual_seed(SEED)
    model = ctor(for_export) if kind[0] == "hf" and name != "bert_heads" else ctor()
    randomise_norms(model, torch.Generator().manual_seed(SEED + 1))
    model.eval()
    return model, kind, outputs


def parse_args():
    """Command line."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True, help="output directory DIR")
    ap.add_argument("--model", required=True, choices=sorted(SPECS))
    ap.add_argument("--opset", type=int, default=17, choices=range(13, 19),
                    metavar="13..18")
    ap.add_argument("--batch", type=int, nargs="+", default=[1, 3],
                    help="batch sizes of the reference cases")
    ap.add_argument("--seq", type=int, default=None,
                    help="sequence length of the reference cases (token models)")
    ap.add_argument("--bn", choices=("keep", "fold"), default="keep",
                    help="keep BatchNormalization nodes in the graph (default) "
                         "or let the exporter fold them into Conv")
    ap.add_argument("--threads", type=int, default=2,
                    help="threads for onnxruntime and PyTorch")
    args = ap.parse_args()
    if any(b < 1 for b in args.batch):
        ap.error("--batch values must be >= 1")
    if args.seq is not None and args.seq < 1:
        ap.error("--seq must be >= 1")
    return args


def main():
    args = parse_args()
    try:
        import onnx
        import onnxruntime as ort
    except ImportError as e:
        skip(f"cannot import onnx/onnxruntime: {e}")
    print(f"torch {torch.__version__}, onnx {onnx.__version__}, "
          f"onnxruntime {ort.__version__}")
    torch.set_num_threads(args.threads)
    model, kind, outputs = build(args.model)
    seq = args.seq or DEFAULT_SEQ.get(kind[0])
    export_batch = first_not_in([2, 3, 5, 6, 7], set(args.batch))
    export_seq = first_not_in([16, 17, 19], {seq}) if has_seq(kind) else None

    root = os.path.join(args.out, args.model)
    os.makedirs(root, exist_ok=True)
    onnx_path = os.path.join(root, "model.onnx")
    rng = np.random.default_rng(SEED)
    names, example = make_inputs(kind, export_batch, export_seq, rng)
    export(model, kind, names, outputs, example, onnx_path, args.opset,
           args.bn == "keep")
    inputs, outs, ops = graph_io(onnx_path)

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = args.threads
    opts.inter_op_num_threads = 1
    sess = ort.InferenceSession(onnx_path, opts, providers=["CPUExecutionProvider"])
    manifest = {"model": args.model, "onnx": "model.onnx", "opset": args.opset,
                "seed": SEED, "batchnorm": args.bn, "op_counts": ops,
                "export_batch": export_batch, "export_seq": export_seq,
                "inputs": inputs, "outputs": outs,
                "tolerance": {"rtol": RTOL, "atol_scale": ATOL_SCALE,
                              "rule": "|got - want| <= atol + rtol * |want|, "
                                      "atol = atol_scale * max|want|"},
                "cases": []}
    all_ok = True
    for b in args.batch:
        case, ok = run_case(root, model, sess, kind, outputs, b, seq, rng)
        manifest["cases"].append(case)
        all_ok = all_ok and ok
    with open(os.path.join(root, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
        f.write("\n")
    print(f"wrote {root}/manifest.json ({len(manifest['cases'])} cases, "
          f"model.onnx {os.path.getsize(onnx_path)} bytes)")
    if not all_ok:
        print(f"onnx_reference.py: {args.model}: onnxruntime and PyTorch disagree "
              f"beyond {HARD_FACTOR:g}x the tolerance", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
