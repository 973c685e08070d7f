#!/usr/bin/env python3
"""gpu_torch_profile.py: PyTorch's own side of the issue-12 kernel comparison, on the GPU.

    /opt/torch/.venv/bin/python3 client/bench/gpu_torch_profile.py

Times torchvision's ResNet-50 (fp32, TF32 off, random weights) replayed from a
captured torch.cuda.graph at batch 1, 8 and 64 with cudnn.benchmark off and
then on (does autotuning find faster strict-FP32 convolutions?), then
BERT-base fp16 (tests/helpers/onnx_reference.py's, seq 128) eager and from a
CUDA graph at batch 1, 8 and 64, with torch.profiler's kernel table of the
batch-8 graph replays.  Timing is client/bench/onnx_peer.py's (CUDA events,
median).  Run from the repository root on a machine with a GPU.
"""
import sys

import numpy as np
import torch
import torchvision

sys.path.insert(0, "client/bench")
import gpu_check_common as gc  # noqa: E402
peer = gc.load_module("onnx_peer", "client/bench/onnx_peer.py")
ref = gc.load_module("onnx_reference", "tests/helpers/onnx_reference.py")
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
def med(fn, runs=40): return float(np.median(peer.time_cuda(torch, fn, runs, 5))) * 1e3
m = torchvision.models.resnet50().cuda().eval()
for bench in (False, True):
    torch.backends.cudnn.benchmark = bench
    for b in (1, 8, 64):
        x = torch.randn(b, 3, 224, 224, device="cuda")
        with torch.no_grad():
            r = peer.cuda_graph(torch, m, [x])
            print(f"resnet50 fp32 cudnn.benchmark={bench} b{b}: graph {med(r):.3f} ms", flush=True)
torch.backends.cudnn.benchmark = False
model, kind, _ = ref.build("bert", for_export=False)
model = model.cuda().eval().half()
for b in (1, 8, 64):
    _, arrays = ref.make_inputs(kind, b, 128, np.random.default_rng(1))
    t = peer.gpu_inputs(torch, arrays, "fp16")
    def eager():
        with torch.no_grad(): model(*t)
    g = peer.graphable_hf(torch, model, t)
    r = peer.cuda_graph(torch, g, t)
    print(f"bert fp16 b{b}: eager {med(eager):.3f} graph {med(r):.3f} ms", flush=True)
    from torch.profiler import profile, ProfilerActivity
    if b == 8:
        with profile(activities=[ProfilerActivity.CUDA]) as p:
            for _ in range(5): r()
            torch.cuda.synchronize()
        print(p.key_averages().table(sort_by="cuda_time_total", row_limit=15), flush=True)
