#!/usr/bin/python3
"""Export the whole-model import cases: PyTorch models to ONNX (opsets 13 and 17, dynamic batch),
one input each at batch 3 (sequence 7 for the transformer) with onnxruntime's outputs as the
reference, and hand-made models inferd must refuse.  Writes OUTDIR/manifest.json.

Exit status 77 when torch, torchvision, onnx or onnxruntime cannot be imported."""
import json
import math
import os
import sys

try:
    import numpy as np
    import onnx
    import onnx.helper as oh
    import onnxruntime as ort
    import torch
    import torch.nn as nn
    import torchvision
except ImportError as e:  # the C test reports the skip
    print(f"skip: {e}", file=sys.stderr)
    sys.exit(77)


class LeNet5(nn.Module):
    def __init__(self):
        super().__init__()
        self.f = nn.Sequential(nn.Conv2d(1, 6, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
                               nn.Conv2d(6, 16, 5), nn.ReLU(), nn.AvgPool2d(2))
        self.c = nn.Sequential(nn.Flatten(), nn.Linear(400, 120), nn.ReLU(), nn.Linear(120, 84),
                               nn.ReLU(), nn.Linear(84, 10))

    def forward(self, x):
        return self.c(self.f(x))


class TokenEncoder(nn.Module):
    """nn.Embedding + a 2-layer nn.TransformerEncoder + a linear head."""

    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(100, 32)
        layer = nn.TransformerEncoderLayer(32, 4, 64, dropout=0.1, batch_first=True)
        self.enc = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        self.head = nn.Linear(32, 10)

    def forward(self, tokens):
        return self.head(self.enc(self.emb(tokens)))


class ViTBlock(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.ln2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(), nn.Linear(2 * dim, dim))

    def forward(self, x):
        b, n, d = x.shape
        h = self.heads
        qkv = self.qkv(self.ln1(x)).reshape(b, n, 3, h, d // h).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        a = torch.softmax(q @ k.transpose(-2, -1) * (d // h) ** -0.5, dim=-1)
        x = x + self.proj((a @ v).transpose(1, 2).reshape(b, n, d))
        return x + self.mlp(self.ln2(x))


class TinyViT(nn.Module):
    def __init__(self, img=32, patch=8, dim=32, depth=2, heads=4, classes=10):
        super().__init__()
        self.proj = nn.Conv2d(3, dim, patch, patch)
        self.cls = nn.Parameter(torch.randn(1, 1, dim) * 0.02)
        self.pos = nn.Parameter(torch.randn(1, (img // patch) ** 2 + 1, dim) * 0.02)
        self.blocks = nn.ModuleList([ViTBlock(dim, heads) for _ in range(depth)])
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, classes)

    def forward(self, x):
        x = self.proj(x).flatten(2).transpose(1, 2)
        x = torch.cat([self.cls.expand(x.shape[0], -1, -1), x], 1) + self.pos
        for blk in self.blocks:
            x = blk(x)
        return self.head(self.norm(x)[:, 0])


def models():
    """(name, module, export example, test input, dynamic axes of the input)."""
    g = torch.Generator().manual_seed(1)
    img = lambda b, c, s: torch.randn(b, c, s, s, generator=g)
    tok = lambda b, n: torch.randint(0, 100, (b, n), generator=g, dtype=torch.int64)
    batch = {0: "batch"}
    return [
        ("lenet5", LeNet5(), img(2, 1, 28), img(3, 1, 28), batch),
        ("resnet18", torchvision.models.resnet18(num_classes=10), img(2, 3, 64), img(3, 3, 64), batch),
        ("mobilenet_v2", torchvision.models.mobilenet_v2(num_classes=10), img(2, 3, 64), img(3, 3, 64),
         batch),
        ("transformer", TokenEncoder(), tok(2, 5), tok(3, 7), {0: "batch", 1: "seq"}),
        ("vit", TinyViT(), img(2, 3, 32), img(3, 3, 32), batch),
    ]


def dtype_name(a):
    return {np.dtype("float32"): "FP32", np.dtype("int64"): "INT64"}[a.dtype]


def export_case(outdir, name, model, example, test, axes, opset):
    """Export one model at one opset, run onnxruntime on the test input, record files and shapes."""
    base = f"{name}_op{opset}"
    path = os.path.join(outdir, base + ".onnx")
    model.eval()
    # Grad stays enabled: under no_grad nn.TransformerEncoder takes fused paths that do not export.
    torch.onnx.export(model, (example,), path, opset_version=opset, input_names=["input"],
                      output_names=["output"], dynamic_axes={"input": axes, "output": axes})
    x = test.numpy()
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    y = sess.run(None, {"input": x})[0]
    x.tofile(os.path.join(outdir, base + ".in0.bin"))
    y.astype(np.float32).tofile(os.path.join(outdir, base + ".out0.bin"))
    nodes = len(onnx.load(path).graph.node)
    return {"name": base, "model": base + ".onnx", "onnx_nodes": nodes,
            "inputs": [{"file": base + ".in0.bin", "dtype": dtype_name(x), "shape": list(x.shape)}],
            "outputs": [{"file": base + ".out0.bin", "shape": list(y.shape),
                         "max_abs": float(np.abs(y).max())}]}


def refused_cases(outdir):
    """Hand-made models with an op or an attribute outside inferd's set, and the message parts expected."""
    f = oh.make_tensor_value_info
    nms = oh.make_graph(
        [oh.make_node("NonMaxSuppression", ["boxes", "scores"], ["sel"], name="nms_0")], "nms",
        [f("boxes", onnx.TensorProto.FLOAT, [1, 4, 4]), f("scores", onnx.TensorProto.FLOAT, [1, 1, 4])],
        [f("sel", onnx.TensorProto.INT64, [None, 3])])
    w = oh.make_tensor("w", onnx.TensorProto.FLOAT, [2, 1, 3, 3], [0.5] * 18)
    conv = oh.make_graph(
        [oh.make_node("Conv", ["x", "w"], ["y"], name="Conv_12", auto_pad="SAME_LOWER")], "conv",
        [f("x", onnx.TensorProto.FLOAT, ["N", 1, 8, 8])], [f("y", onnx.TensorProto.FLOAT, ["N", 2, 8, 8])],
        initializer=[w])
    cubic = oh.make_graph(
        [oh.make_node("Resize", ["x", "", "scales"], ["y"], name="up", mode="cubic")], "cubic",
        [f("x", onnx.TensorProto.FLOAT, ["N", 1, 4, 4])], [f("y", onnx.TensorProto.FLOAT, ["N", 1, 8, 8])],
        initializer=[oh.make_tensor("scales", onnx.TensorProto.FLOAT, [4], [1, 1, 2, 2])])
    double = oh.make_graph(
        [oh.make_node("Relu", ["x"], ["y"], name="relu")], "double",
        [f("x", onnx.TensorProto.DOUBLE, ["N", 4])], [f("y", onnx.TensorProto.DOUBLE, ["N", 4])])
    out = []
    for name, graph, expect in [
            ("refuse_resize_cubic", cubic,
             ["node 'up' (Resize, opset 17): attribute mode=cubic not supported"]),
            ("refuse_double", double, ["input 'x': dtype DOUBLE not supported"]),
            ("refuse_nms", nms, ["node 'nms_0' (NonMaxSuppression, opset 17): op NonMaxSuppression not supported"]),
            ("refuse_conv_same_lower", conv,
             ["node 'Conv_12' (Conv, opset 17): attribute auto_pad=SAME_LOWER not supported"])]:
        model = oh.make_model(graph, opset_imports=[oh.make_opsetid("", 17)])
        onnx.save(model, os.path.join(outdir, name + ".onnx"))
        out.append({"model": name + ".onnx", "expect": expect})
    return out


def main():
    outdir = sys.argv[1]
    os.makedirs(outdir, exist_ok=True)
    torch.manual_seed(0)
    cases = []
    for name, model, example, test, axes in models():
        for opset in (13, 17):
            cases.append(export_case(outdir, name, model, example, test, axes, opset))
    manifest = {"cases": cases, "refused": refused_cases(outdir)}
    with open(os.path.join(outdir, "manifest.json"), "w") as fp:
        json.dump(manifest, fp, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
