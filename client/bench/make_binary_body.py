#!/usr/bin/env python3
"""Write a binary-extension KServe request body for wrk-post-binary.lua and print its header length.

    make_binary_body.py OUT [ROWS] [FLOATS]   # defaults: 1 row of 784 floats, random in [0, 1), seed 1
The answer is asked for as binary data too (outputs[].parameters.binary_data)."""
import json
import random
import struct
import sys

out, rows, floats = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 1, \
    int(sys.argv[3]) if len(sys.argv) > 3 else 784
random.seed(1)
raw = struct.pack("<%df" % (rows * floats), *(random.random() for _ in range(rows * floats)))
header = json.dumps({"inputs": [{"name": "input", "shape": [rows, floats], "datatype": "FP32",
                                 "parameters": {"binary_data_size": len(raw)}}],
                     "outputs": [{"name": "logits", "parameters": {"binary_data": True}}]},
                    separators=(",", ":")).encode()
with open(out, "wb") as f:
    f.write(header + raw)
print(len(header))
