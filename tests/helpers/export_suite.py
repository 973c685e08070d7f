#!/usr/bin/python3
"""export_suite.py: models people bring, exported with torch.onnx.export and checked against onnxruntime and PyTorch.

Two runs:

  export_suite.py OUTDIR [MODEL...]
      the engine suite (tests/unit/test_export_suite.sh): small models of this file (a GPT-style decoder with a
      torch.triu mask, LSTM/GRU classifiers and taggers, transformers' BertModel, swin's shifted-window block,
      GroupNorm / InstanceNorm / einsum / one_hot / scatter in OpsMix, transformers' CLIPTextModel pooling by
      ArgMax, torch's repeat as Tile in TileMix) exported with the TorchScript exporter at opsets 14 and 17 with random weights, each run by onnxruntime at
      several input shapes; written as OUTDIR/manifest.json in make_onnx_node_cases.py's format (one directory per
      export, every case must_load, or expect_refusal naming the op for the exports listed in KNOWN_REFUSALS) for
      onnx_node_engine.  A model torch cannot export is listed in OUTDIR/not_exportable.txt with the error.

  export_suite.py --device cpu|cuda:0|both [--exporters torchscript,dynamo] [--only NAME,...] [--out FILE.json]
                  [--inferd PATH] [--jobs N] [--timeout S] [--workdir DIR] [--tol 1e-4] [--expect-right] [--list]
      the serving suite: the models people serve (export_suite_zoo.py: torchvision classification, segmentation,
      detection and video, transformers encoders and GPT-2 from config objects, timm, YOLOv8n), each built with
      random weights (BatchNorm statistics and affine parameters randomised as training leaves them), exported
      by each exporter (TorchScript at opset 17, dynamo at its default opset; a dynamic batch axis, and the
      sequence axis of text), served by a real inferd daemon per device (export_suite_serve.py: load, two input
      cases over HTTP, unload; fp32, TF32 off) and compared with onnxruntime and PyTorch (fp32, CPU).  A cell is
      right (max error <= --tol of the output scale against both, the outputs vary across the two inputs, a
      classifier's top-5 classes equal), wrong, refused (the load error's node and op), not exportable (the
      exporter's first error line), exporter unavailable, not available (library missing), crash (the daemon
      died: printed loudly), timeout, run error or degenerate (PyTorch's own outputs do not vary).  Each model is
      built and exported in a process of its own (--jobs at once, --timeout seconds each).  Writes --out (JSON,
      rewritten after every record) and --out with .md for the markdown table, which is also printed with the
      totals.  Exit 0, or 1 with --expect-right when any record is neither right nor an exporter or library
      missing, or when the daemon crashed.

Exit 77 when torch, onnx or onnxruntime cannot be imported."""
import inspect
import json
import os
import sys

try:
    import numpy as np
    import onnxruntime as ort
    import torch
    from torch import nn
except ImportError as e:
    print(f"skip: {e}", file=sys.stderr)
    sys.exit(77)

OPSETS = (14, 17)
# This suite is the TorchScript exporter's (torch >= 2.9 exports with dynamo unless told otherwise).
TORCHSCRIPT = {"dynamo": False} if "dynamo" in inspect.signature(torch.onnx.export).parameters else {}
# torch >= 2.1 runs an eval-mode nn.TransformerEncoderLayer as one fused aten op the TorchScript exporter cannot write;
# the layer's own ops are what users' exports contain.
if hasattr(torch.backends, "mha") and hasattr(torch.backends.mha, "set_fastpath_enabled"):
    torch.backends.mha.set_fastpath_enabled(False)
# Exports inferd refuses today, with the text its refusal must contain (never a wrong answer): pack_padded_sequence
# with enforce_sorted=False sorts the lengths with a TopK whose k is the batch size, computed at run time (and
# uses ReduceProd, not supported either).
KNOWN_REFUSALS = {"packed_bilstm": "(TopK, opset"}
NAMES = {"float32": "FP32", "int64": "INT64", "int32": "INT32", "bool": "BOOL"}


class Decoder(nn.Module):
    """A GPT-style decoder block stack whose causal mask is torch.triu over the sequence length."""

    def __init__(self, vocab=50, dim=32, heads=4, layers=2):
        super().__init__()
        # As many positions as the daemon's default largest sequence (512): a shorter table's Gather is
        # out of range at the largest shape the daemon plans for.
        self.emb, self.pos = nn.Embedding(vocab, dim), nn.Embedding(512, dim)
        self.layers = nn.ModuleList(nn.TransformerEncoderLayer(dim, heads, 64, dropout=0.0, batch_first=True)
                                    for _ in range(layers))
        self.head = nn.Linear(dim, vocab)

    def forward(self, ids):
        t = ids.shape[1]
        mask = torch.triu(torch.full((t, t), float("-inf")), diagonal=1)
        x = self.emb(ids) + self.pos(torch.arange(t).unsqueeze(0))
        for layer in self.layers:
            x = layer(x, src_mask=mask)
        return self.head(x)


class LstmClassifier(nn.Module):
    """Embedding, a two-layer LSTM, the last step's state classified."""

    def __init__(self, vocab=40, dim=16, hidden=24, classes=5, bidirectional=False):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        self.rnn = nn.LSTM(dim, hidden, num_layers=2, batch_first=True, bidirectional=bidirectional)
        self.fc = nn.Linear(hidden * (2 if bidirectional else 1), classes)

    def forward(self, ids):
        y, (h, c) = self.rnn(self.emb(ids))
        # The final states batch-first: the daemon serves outputs whose first dim is the batch.
        return self.fc(y[:, -1]), h.transpose(0, 1)


class GruTagger(nn.Module):
    """A GRU over feature vectors, a tag per step."""

    def __init__(self, feat=12, hidden=20, tags=7):
        super().__init__()
        self.rnn = nn.GRU(feat, hidden, batch_first=True)
        self.fc = nn.Linear(hidden, tags)

    def forward(self, x):
        y, h = self.rnn(x)
        return self.fc(y), h.transpose(0, 1)


class PackedBiLstm(nn.Module):
    """A bidirectional LSTM over padded sequences with their lengths (pack_padded_sequence)."""

    def __init__(self, feat=8, hidden=12):
        super().__init__()
        self.rnn = nn.LSTM(feat, hidden, batch_first=True, bidirectional=True)

    def forward(self, x, lengths):
        packed = nn.utils.rnn.pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
        y, (h, c) = self.rnn(packed)
        y, _ = nn.utils.rnn.pad_packed_sequence(y, batch_first=True, total_length=x.shape[1])
        return y, h.transpose(0, 1)


class BertWrap(nn.Module):
    """transformers' BertModel (tiny config, random weights, its default attention): hidden states and pooled."""

    def __init__(self):
        super().__init__()
        from transformers import BertConfig, BertModel
        cfg = BertConfig(vocab_size=100, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                         intermediate_size=64, max_position_embeddings=64)
        self.bert = BertModel(cfg)

    def forward(self, ids, mask):
        out = self.bert(input_ids=ids, attention_mask=mask)
        return out.last_hidden_state, out.pooler_output


class WindowAttention(nn.Module):
    """Swin's shifted-window attention block written out (roll, window partition, relative bias, mask)."""

    def __init__(self, dim=32, heads=4, window=4, shift=2, res=8):
        super().__init__()
        from torchvision.models.swin_transformer import SwinTransformerBlock
        self.block = SwinTransformerBlock(dim, heads, [window, window], [shift, shift], dropout=0.0,
                                          attention_dropout=0.0, stochastic_depth_prob=0.0)

    def forward(self, x):
        return self.block(x)


class OpsMix(nn.Module):
    """GroupNorm and InstanceNorm2d after a conv, einsum attention over the pixels, one_hot of labels and
    scatter / scatter_add into them (InstanceNormalization, Einsum, OneHot, ScatterElements once exported)."""

    def __init__(self, ch=8, groups=4, classes=5):
        super().__init__()
        self.conv = nn.Conv2d(3, ch, 3, padding=1)
        self.gn = nn.GroupNorm(groups, ch)
        self.inorm = nn.InstanceNorm2d(ch, affine=True)
        self.classes = classes

    def forward(self, x, labels):
        q = self.inorm(self.gn(self.conv(x))).flatten(2).transpose(1, 2)
        z = torch.einsum("bij,bjc->bic", torch.einsum("bic,bjc->bij", q, q).softmax(-1), q)
        oh = nn.functional.one_hot(labels, self.classes).float()
        at = labels.unsqueeze(-1)
        sc = torch.zeros_like(oh).scatter_add(2, at, torch.ones_like(at, dtype=torch.float32))
        return z, oh, sc + torch.zeros_like(oh).scatter(2, at, 2.0)


class ClipTextWrap(nn.Module):
    """transformers' CLIPTextModel (tiny config, random weights): its pooled output is the hidden state at each
    row's argmax of the ids cast to INT32 (eos_token_id 2, the legacy rule: Cast, ArgMax(-1), indexing by
    [arange(batch), argmax]), or at the first position equal to eos_token_id (Equal, Cast, ArgMax)."""

    def __init__(self, eos=2):
        super().__init__()
        from transformers import CLIPTextConfig, CLIPTextModel
        # As many positions as the daemon's default largest sequence (512), as the decoder above.
        cfg = CLIPTextConfig(vocab_size=100, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                             num_attention_heads=4, max_position_embeddings=512, eos_token_id=eos)
        self.clip = CLIPTextModel(cfg)

    def forward(self, ids):
        out = self.clip(input_ids=ids)
        return out.last_hidden_state, out.pooler_output


class TileMix(nn.Module):
    """torch's repeat as detection heads use it: constant anchors repeated per image (Tile whose repeats hold
    the batch size, computed from the input's shape) and a feature map tiled by constant repeats."""

    def __init__(self):
        super().__init__()
        self.anchors = nn.Parameter(torch.randn(1, 6, 4))
        self.fc = nn.Linear(4, 3)

    def forward(self, x):
        a = self.anchors.repeat(x.shape[0], 1, 1)
        return self.fc(torch.cat([a, x], 1)), x.repeat(1, 2, 3)


def eos_ids(rng, shape, eos):
    """Token ids below eos with eos at a random position of most rows (twice in some: the first counts)."""
    a = rng.integers(0, eos, size=shape).astype(np.int64)
    for r in range(shape[0]):
        for _ in range(int(rng.integers(0, 3))):
            a[r, int(rng.integers(0, shape[1]))] = eos
    return a


def ids(rng, shape, vocab):
    """Random token ids."""
    return rng.integers(0, vocab, size=shape).astype(np.int64)


def models(rng):
    """name -> (module, input names, output names, dynamic axes, list of input tuples at varied shapes)."""
    out = {}
    out["gpt_decoder_triu"] = (Decoder(), ["ids"], ["logits"], {"ids": {0: "b", 1: "t"}},
                               [(ids(rng, s, 50),) for s in ((1, 5), (2, 9), (3, 16))])
    out["lstm_classifier"] = (LstmClassifier(), ["ids"], ["logits", "h"], {"ids": {0: "b", 1: "t"}},
                              [(ids(rng, s, 40),) for s in ((1, 4), (3, 11), (2, 20))])
    out["bilstm_classifier"] = (LstmClassifier(bidirectional=True), ["ids"], ["logits", "h"],
                                {"ids": {0: "b", 1: "t"}}, [(ids(rng, s, 40),) for s in ((1, 3), (2, 13))])
    out["gru_tagger"] = (GruTagger(), ["x"], ["tags", "h"], {"x": {0: "b", 1: "t"}},
                         [(rng.standard_normal(s).astype(np.float32),) for s in ((1, 6, 12), (4, 10, 12))])
    out["packed_bilstm"] = (PackedBiLstm(), ["x", "lengths"], ["y", "h"], {"x": {0: "b", 1: "t"},
                            "lengths": {0: "b"}},
                            [(rng.standard_normal((3, 7, 8)).astype(np.float32), np.array([7, 4, 2], np.int64))])
    out["bert_default_attention"] = (BertWrap(), ["ids", "mask"], ["hidden", "pooled"],
                                     {"ids": {0: "b", 1: "t"}, "mask": {0: "b", 1: "t"}},
                                     [(ids(rng, (b, t), 100), (np.arange(t)[None, :] < np.array(lens)[:, None]).astype(
                                         np.int64)) for b, t, lens in ((1, 6, [6]), (2, 12, [12, 7]), (3, 9, [9, 1, 5]))])
    out["swin_window_block"] = (WindowAttention(), ["x"], ["y"], {"x": {0: "b"}},
                                [(rng.standard_normal((b, 8, 8, 32)).astype(np.float32),) for b in (1, 2)])
    out["ops_mix"] = (OpsMix(), ["x", "labels"], ["z", "onehot", "scattered"],
                      {"x": {0: "b"}, "labels": {0: "b", 1: "n"}},
                      [(rng.standard_normal((b, 3, 4, 5)).astype(np.float32), ids(rng, (b, n), 5))
                       for b, n in ((1, 3), (2, 7), (3, 4))])
    out["clip_text_argmax"] = (ClipTextWrap(), ["ids"], ["hidden", "pooled"], {"ids": {0: "b", 1: "t"}},
                               [(ids(rng, s, 100),) for s in ((1, 7), (2, 16), (3, 5))])
    out["clip_text_eos"] = (ClipTextWrap(eos=99), ["ids"], ["hidden", "pooled"], {"ids": {0: "b", 1: "t"}},
                            [(eos_ids(rng, s, 99),) for s in ((1, 7), (3, 16), (4, 5))])
    out["tile_mix"] = (TileMix(), ["x"], ["boxes", "tiled"], {"x": {0: "b", 1: "n"}},
                       [(rng.standard_normal((b, n, 4)).astype(np.float32),) for b, n in ((1, 2), (3, 5), (2, 1))])
    return out


def write(outdir, case, tag, a):
    """One tensor as raw bytes beside the manifest."""
    a = np.ascontiguousarray(a)
    fname = f"{case}.{tag}.bin"
    a.tofile(os.path.join(outdir, fname))
    return {"file": fname, "dtype": NAMES[a.dtype.name], "shape": list(a.shape)}


def export(outdir, name, spec, opset, cases, failed):
    """Export one model at one opset and record its cases; False when torch cannot export it."""
    mod, inames, onames, dyn, feeds = spec
    d = os.path.join(outdir, f"{name}_op{opset}")
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, "model.onnx")
    try:
        with torch.no_grad():
            torch.onnx.export(mod, tuple(torch.from_numpy(a) for a in feeds[0]), path, input_names=inames,
                              output_names=onames, dynamic_axes=dyn, opset_version=opset, **TORCHSCRIPT)
        sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    except Exception as e:  # the exporter's own limits are recorded, not failed
        failed.append(f"{name} opset {opset}: {type(e).__name__}: {str(e).splitlines()[0][:300]}")
        return
    for k, f in enumerate(feeds):
        res = sess.run(None, dict(zip(inames, f)))
        case = f"{name}_op{opset}_{k}"
        cases.append({"name": case, "model": path, "node_test": True, "must_load": True,
                      **({"expect_refusal": KNOWN_REFUSALS[name]} if name in KNOWN_REFUSALS else {}),
                      "inputs": [write(outdir, case, f"input{i}", a) for i, a in enumerate(f)],
                      "outputs": [write(outdir, case, f"output{i}", r) for i, r in enumerate(res)]})


def engine_main():
    """The engine suite: OUTDIR/manifest.json for onnx_node_engine."""
    outdir = sys.argv[1]
    os.makedirs(outdir, exist_ok=True)
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    cases, failed = [], []
    for name, spec in models(rng).items():
        if len(sys.argv) > 2 and name not in sys.argv[2:]:
            continue
        spec[0].eval()
        for opset in OPSETS:
            export(outdir, name, spec, opset, cases, failed)
    with open(os.path.join(outdir, "manifest.json"), "w") as fp:
        json.dump({"cases": cases, "refused": [], "min_ran": sum("expect_refusal" not in c for c in cases)}, fp,
                  indent=1)
    with open(os.path.join(outdir, "not_exportable.txt"), "w") as fp:
        fp.write("".join(f + "\n" for f in failed))
    print(f"{len(cases)} cases; not exportable: {len(failed)}")
    for f in failed:
        print("not exportable:", f)
    return 0


def main():
    """The engine suite with OUTDIR first, else the serving suite (export_suite_driver.py) with its options."""
    if len(sys.argv) > 1 and not sys.argv[1].startswith("-"):
        return engine_main()
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import export_suite_driver
    return export_suite_driver.main(sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
