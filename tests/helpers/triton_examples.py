#!/usr/bin/env python3
"""triton_examples.py: Triton's own Python HTTP client examples (triton-inference-server/client,
src/python/examples, from a checkout named by the caller; they are not part of inferd) run unchanged
against inferd, with the models they expect built as ONNX in a Triton-layout repository.

usage: triton_examples.py setup REPO                 (writes the repository)
       triton_examples.py run EXAMPLES_DIR URL [--port8000]
Prints one line per example (PASS, FAIL or NOT RUN with the reason) and exits 1 when an example that
inferd supports fails."""
import importlib.util
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bytes_check  # noqa: E402
import triton_repository as repo  # noqa: E402

IDENTITY = """
name: "custom_identity_int32"
platform: "onnxruntime_onnx"
max_batch_size: 8
input [ { name: "INPUT0" data_type: TYPE_INT32 dims: [ 16 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_INT32 dims: [ 16 ] } ]
"""

# The examples inferd supports, with their arguments beyond -u, in the order run.  "8000": the example
# has no URL option and talks to localhost:8000.
SUPPORTED = [
    ("simple_http_infer_client.py", []),
    ("simple_http_infer_client.py", ["--request-compression-algorithm", "gzip",
                                     "--response-compression-algorithm", "gzip"]),
    ("simple_http_async_infer_client.py", []),
    ("simple_http_aio_infer_client.py", []),
    ("simple_http_shm_client.py", []),
    ("simple_http_string_infer_client.py", []),
    ("simple_http_shm_string_client.py", []),
    ("memory_growth_test.py", ["8000"]),
]
# image_client.py against densenet_onnx (an image classifier with labels, input format NCHW), when the Python
# running the examples has what it imports (tritonclient[grpc] for the model-config protobuf, attrdict, PIL).
IMAGE_CLIENT = [["-m", "densenet_onnx", "-c", "3", "-s", "INCEPTION"],
                ["-m", "densenet_onnx", "-c", "3", "-s", "VGG", "-b", "2", "--async"]]
# Run after everything else: it unloads simple.
LAST = ("simple_http_model_control.py", [])

# Examples run and reported, not required, with why they cannot pass against this daemon.
REPORTED = {
    "simple_http_health_metadata.py": "checks that the server is named 'triton'",
    "reuse_infer_objects_client.py": "imports tritonclient.grpc (gRPC is out of scope)",
    "simple_http_cudashm_client.py": "needs a GPU daemon and CUDA shared memory",
}


def save_identity(path):
    import onnx
    from onnx import TensorProto as T, helper
    g = helper.make_graph([helper.make_node("Identity", ["INPUT0"], ["OUTPUT0"])], "identity",
                          [helper.make_tensor_value_info("INPUT0", T.INT32, ["batch", 16])],
                          [helper.make_tensor_value_info("OUTPUT0", T.INT32, ["batch", 16])])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), path)


DENSENET = """name: "densenet_onnx"
platform: "onnxruntime_onnx"
max_batch_size: 8
input [ { name: "data_0" data_type: TYPE_FP32 format: FORMAT_NCHW dims: [ 3, 224, 224 ] } ]
output [ { name: "fc6_1" data_type: TYPE_FP32 dims: [ 1000 ] label_filename: "densenet_labels.txt" } ]
"""


def save_classifier(path):
    """A 1000-class image classifier (global average pool, then a random linear layer) named as Triton's densenet_onnx."""
    import numpy as np
    import onnx
    from onnx import TensorProto as T, helper, numpy_helper
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((1000, 3)).astype(np.float32), "W")
    b = numpy_helper.from_array(rng.standard_normal(1000).astype(np.float32), "B")
    nodes = [helper.make_node("GlobalAveragePool", ["data_0"], ["p"]), helper.make_node("Flatten", ["p"], ["f"]),
             helper.make_node("Gemm", ["f", "W", "B"], ["fc6_1"], transB=1)]
    g = helper.make_graph(nodes, "densenet_onnx", [helper.make_tensor_value_info("data_0", T.FLOAT, ["b", 3, 224, 224])],
                          [helper.make_tensor_value_info("fc6_1", T.FLOAT, ["b", 1000])], [w, b])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), path)


def save_image(path):
    """A 400x300 JPEG of random pixels for image_client.py (PIL, which the example needs anyway)."""
    import numpy as np
    from PIL import Image
    Image.fromarray((np.random.default_rng(1).random((300, 400, 3)) * 255).astype(np.uint8)).save(path)


def setup(root):
    """simple, simple_string, simple_identity, custom_identity_int32, densenet_onnx and two more: the
    model-control example expects an index of 7; image_client.jpg beside the repository."""
    repo.folder(root, "simple", repo.SIMPLE)
    bytes_check.setup_simple_string(root)
    bytes_check.setup_simple_identity(root)
    repo.folder(root, "custom_identity_int32", IDENTITY, onnx_saver=save_identity)
    repo.folder(root, "densenet_onnx", DENSENET, onnx_saver=save_classifier,
                extra={"densenet_labels.txt": "".join("LABEL_%d\n" % i for i in range(1000))})
    try:
        save_image(os.path.join(os.path.dirname(os.path.abspath(root)), "image_client.jpg"))
    except ImportError:
        pass
    for i in range(2):
        name = "identity_%d" % i
        repo.folder(root, name, IDENTITY.replace("custom_identity_int32", name), onnx_saver=save_identity)


def run_one(examples, url, script, args):
    """Run one example with /usr/bin/python3 (where tritonclient is); (ok, the output's tail)."""
    on_8000 = args[:1] == ["8000"]
    cmd = [sys.executable, os.path.join(examples, script)] + ([] if on_8000 else ["-u", url] + args)
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    except subprocess.TimeoutExpired:
        return False, "timed out"
    return p.returncode == 0, (p.stdout + p.stderr).strip().splitlines()[-3:]


def run_supported(examples, url, script, args, port8000):
    """Run one example inferd supports; 1 when it failed."""
    label = script + (" " + " ".join(args) if args and args != ["8000"] else "")
    if args == ["8000"] and not port8000:
        print("NOT RUN: %s (talks to localhost:8000, which was taken)" % label)
        return 0
    ok, tail = run_one(examples, url, script, args)
    print("%s: %s%s" % ("PASS" if ok else "FAIL", label, "" if ok else " -- %s" % tail))
    return 0 if ok else 1


def run_image_client(examples, url, image):
    """image_client.py on densenet_onnx; 1 when it failed, 0 when passed or its imports are missing here."""
    # Found, not imported: attrdict imports on Python >= 3.10 only after the example's own collections patch.
    try:
        import tritonclient.grpc  # noqa: F401
        missing = [m for m in ("PIL", "attrdict") if importlib.util.find_spec(m) is None]
    except Exception as e:
        missing = [str(e)]
    if missing:
        print("NOT RUN: image_client.py (this Python lacks what it imports: %s)" % ", ".join(missing))
        return 0
    return sum(run_supported(examples, url, "image_client.py", args + [image], False) for args in IMAGE_CLIENT)


def run(examples, url, port8000, image):
    failed = sum(run_supported(examples, url, script, args, port8000) for script, args in SUPPORTED)
    failed += run_image_client(examples, url, image)
    for script, why in sorted(REPORTED.items()):
        ok, tail = run_one(examples, url, script, [])
        print("%s: %s (%s)" % ("PASS" if ok else "NOT SUPPORTED", script, why))
    return failed + run_supported(examples, url, LAST[0], LAST[1], port8000)


def main():
    if sys.argv[1] == "setup":
        setup(sys.argv[2])
        return 0
    image = os.path.join(os.path.dirname(os.path.abspath(sys.argv[4])), "image_client.jpg") if len(sys.argv) > 4 and \
        not sys.argv[4].startswith("--") else ""
    return 1 if run(sys.argv[2], sys.argv[3], "--port8000" in sys.argv, image) else 0


if __name__ == "__main__":
    sys.exit(main())
