#!/usr/bin/env python3
"""make_multi_onnx.py DIR: write DIR/multi/{model.onnx,model.json}, a model of two inputs and three outputs.

Inputs x FP32 [N, 4] and ids INT64 [N, S] (S variable, at most 16); outputs y = 2 x (FP32 [N, 4]),
s = sum over S of float(ids) (FP32 [N, 1]) and z = float(ids) / 2 (FP32 [N, S]).  Every value the tests
use is exact in float32, so any path through the daemon must give the same bits.  Exits 77 without onnx.
"""
import json
import os
import sys

try:
    import onnx
    from onnx import TensorProto, helper
except ImportError as e:
    print("SKIP: python3 cannot import onnx (%s)" % e)
    sys.exit(77)


def main():
    out = os.path.join(sys.argv[1], "multi")
    os.makedirs(out, exist_ok=True)
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4]),
              helper.make_tensor_value_info("ids", TensorProto.INT64, ["N", "S"])]
    outputs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4]),
               helper.make_tensor_value_info("s", TensorProto.FLOAT, ["N", 1]),
               helper.make_tensor_value_info("z", TensorProto.FLOAT, ["N", "S"])]
    inits = [helper.make_tensor("two", TensorProto.FLOAT, [], [2.0]),
             helper.make_tensor("half", TensorProto.FLOAT, [], [0.5]),
             helper.make_tensor("axes", TensorProto.INT64, [1], [1])]
    nodes = [helper.make_node("Mul", ["x", "two"], ["y"], name="double"),
             helper.make_node("Cast", ["ids"], ["f"], name="cast", to=TensorProto.FLOAT),
             helper.make_node("ReduceSum", ["f", "axes"], ["s"], name="sum", keepdims=1),
             helper.make_node("Mul", ["f", "half"], ["z"], name="halve")]
    graph = helper.make_graph(nodes, "multi", inputs, outputs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    onnx.checker.check_model(model)
    onnx.save(model, os.path.join(out, "model.onnx"))
    with open(os.path.join(out, "model.json"), "w") as f:
        json.dump({"platform": "onnx", "max_batch_size": 8, "max_dims": {"ids": [16]},
                   "dynamic_batching": {"max_queue_delay_us": 20000}}, f)


if __name__ == "__main__":
    main()
