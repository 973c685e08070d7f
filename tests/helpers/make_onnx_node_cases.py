#!/usr/bin/python3
"""List the ONNX project's own node tests (shipped in the onnx package) whose ops are all in
inferd's set, with their inputs and expected outputs as raw little-endian files, in
OUTDIR/manifest.json for test_onnx_import's node mode.

Exit status 77 when onnx or numpy cannot be imported."""
import json
import os
import sys

try:
    import numpy as np
    import onnx
    from onnx import numpy_helper
except ImportError as e:
    print(f"skip: {e}", file=sys.stderr)
    sys.exit(77)

SUPPORTED = set("""Conv ConvTranspose BatchNormalization Gemm MatMul Add Sub Mul Div Pow Equal Max Min
Relu Sigmoid Tanh Exp Log Sqrt Neg Reciprocal Erf Abs HardSwish LeakyRelu HardSigmoid Gelu Clip PRelu
Softmax LogSoftmax MaxPool AveragePool GlobalAveragePool GlobalMaxPool ReduceMean ReduceSum ReduceMax
LayerNormalization Reshape Flatten Squeeze Unsqueeze Transpose Concat Split Slice Gather Expand Pad
Resize Shape Cast ConstantOfShape Range Where Constant Identity Dropout GatherElements Greater Less
GreaterOrEqual LessOrEqual And Or Mod Xor Not IsNaN IsInf Trilu CumSum GatherND ScatterND RNN GRU LSTM TopK
ScatterElements OneHot InstanceNormalization GroupNormalization Einsum ReduceMin ReduceProd ReduceL1 ReduceL2
ReduceSumSquare ReduceLogSumExp Ceil Floor Round ArgMax ArgMin Tile""".split())

# Tests whose expected data disagree with onnxruntime, which inferd follows.
EXCLUDED = {
    "test_averagepool_3d_dilations_large_count_include_pad_is_1_ceil_mode_is_True":
        "the ONNX reference counts ceil_mode's overhang past the end padding in the divisor; "
        "onnxruntime (and PyTorch) do not (onnxruntime's own output differs by 19%)",
    "test_averagepool_2d_ceil_last_window_starts_on_pad":
        "its expected values are written rounded to 4 decimals (0.1511 for 0.151056); onnxruntime "
        "differs from them by 5.6e-5 as inferd does, past this harness's 1e-5 tolerance",
}

DTYPES = {np.dtype("float32"): "FP32", np.dtype("int64"): "INT64", np.dtype("int32"): "INT32",
          np.dtype("bool"): "BOOL", np.dtype("uint8"): "UINT8", np.dtype("int8"): "INT8",
          np.dtype("float16"): "FP16"}


def tensors(dirpath, prefix, outdir, base):
    """The test's input_N.pb / output_N.pb as files; None when a dtype has no inferd name."""
    out, k = [], 0
    while os.path.exists(os.path.join(dirpath, f"{prefix}_{k}.pb")):
        t = onnx.TensorProto()
        with open(os.path.join(dirpath, f"{prefix}_{k}.pb"), "rb") as fp:
            t.ParseFromString(fp.read())
        a = numpy_helper.to_array(t)
        if a.dtype not in DTYPES:
            return None
        name = f"{base}.{prefix}{k}.bin"
        np.ascontiguousarray(a).tofile(os.path.join(outdir, name))
        out.append({"file": name, "dtype": DTYPES[a.dtype], "shape": list(a.shape)})
        k += 1
    return out


def main():
    outdir = sys.argv[1]
    os.makedirs(outdir, exist_ok=True)
    root = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "node")
    if not os.path.isdir(root):
        # Some builds of the onnx package leave the node test data out.
        print("SKIP: this onnx package (%s) has no node test data at %s" % (onnx.__version__, root))
        sys.exit(77)
    cases = []
    for test in sorted(os.listdir(root)):
        path = os.path.join(root, test, "model.onnx")
        data = os.path.join(root, test, "test_data_set_0")
        if not os.path.exists(path) or not os.path.isdir(data):
            continue
        model = onnx.load(path)
        ops = {n.op_type for n in model.graph.node}
        if not ops or not ops <= SUPPORTED or any(n.domain not in ("", "ai.onnx") for n in model.graph.node):
            continue
        try:
            ins, outs = tensors(data, "input", outdir, test), tensors(data, "output", outdir, test)
        except (ValueError, TypeError, onnx.onnx_cpp2py_export.checker.ValidationError):
            continue  # a sequence or optional value, not a tensor
        if ins is None or outs is None or not ins or not outs:
            continue
        case = {"name": test, "model": path, "node_test": True, "inputs": ins, "outputs": outs}
        if test in EXCLUDED:
            case["excluded"] = EXCLUDED[test]
        cases.append(case)
    with open(os.path.join(outdir, "manifest.json"), "w") as fp:
        json.dump({"cases": cases, "refused": []}, fp, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
