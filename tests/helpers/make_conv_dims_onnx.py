#!/usr/bin/env python3
"""make_conv_dims_onnx.py DIR [STRIDE]: two models whose output dims the inputs' dims compute (test_shm_output_dims.sh).

DIR/convdims: x FP32 [N, 2, T] (T variable, at most 64); y = Conv(x) with 3 filters of width 3, stride
STRIDE (default 2) and pads 1 ([N, 3, ceil(T/2)] at stride 2: a dim computed from T, so its metadata says
-2), and z = x + 1 ([N, 2, T]: a dim that follows T).
DIR/split4: x FP32 [N, 2, T] (T at most 64); y = Reshape(x, [0, -1, 4]) ([N, 2T/4, 4]): a T that makes 2T
not a multiple of 4 is refused by node 'split4'.
Exits 77 without onnx or numpy.
"""
import json
import os
import sys

try:
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper
except ImportError as e:
    print("SKIP: python3 cannot import onnx or numpy (%s)" % e)
    sys.exit(77)


def save(root, name, graph, max_dims):
    """Check the graph's model and write it with its model.json under root/name."""
    out = os.path.join(root, name)
    os.makedirs(out, exist_ok=True)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8  # newer onnx writes an IR version older onnxruntime releases refuse
    onnx.checker.check_model(model)
    onnx.save(model, os.path.join(out, "model.onnx"))
    with open(os.path.join(out, "model.json"), "w") as f:
        json.dump({"platform": "onnx", "max_batch_size": 4, "max_dims": max_dims}, f)


def convdims(root, stride):
    """The strided Conv1d model."""
    rng = np.random.default_rng(7)
    w = rng.uniform(-1, 1, size=(3, 2, 3)).astype(np.float32)
    b = rng.uniform(-1, 1, size=(3,)).astype(np.float32)
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["y"], name="conv", kernel_shape=[3], strides=[stride],
                              pads=[1, 1]),
             helper.make_node("Add", ["x", "one"], ["z"], name="plus_one")]
    graph = helper.make_graph(
        nodes, "convdims", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 2, "T"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 3, None]),
         helper.make_tensor_value_info("z", TensorProto.FLOAT, ["N", 2, "T"])],
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b"),
         helper.make_tensor("one", TensorProto.FLOAT, [], [1.0])])
    save(root, "convdims", graph, {"x": [2, 64]})


def split4(root):
    """The Reshape that needs 2T to be a multiple of 4."""
    graph = helper.make_graph(
        [helper.make_node("Reshape", ["x", "shape"], ["y"], name="split4")], "split4",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 2, "T"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", None, 4])],
        [helper.make_tensor("shape", TensorProto.INT64, [3], [0, -1, 4])])
    save(root, "split4", graph, {"x": [2, 64]})


def main():
    convdims(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 2)
    split4(sys.argv[1])


if __name__ == "__main__":
    main()
