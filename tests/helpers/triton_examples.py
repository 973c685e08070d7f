#!/usr/bin/env python3
"""triton_examples.py: Triton's own Python HTTP client examples (triton-inference-server/client,
src/python/examples, from a checkout named by the caller; they are not part of inferd) run unchanged
against inferd, with the models they expect built as ONNX in a Triton-layout repository.

usage: triton_examples.py setup REPO                 (writes the repository)
       triton_examples.py run EXAMPLES_DIR URL [--port8000]
Prints one line per example (PASS, FAIL or NOT RUN with the reason) and exits 1 when an example that
inferd supports fails."""
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


def setup(root):
    """simple, simple_string, simple_identity, custom_identity_int32 and three more: the model-control example
    expects an index of 7."""
    repo.folder(root, "simple", repo.SIMPLE)
    bytes_check.setup_simple_string(root)
    bytes_check.setup_simple_identity(root)
    repo.folder(root, "custom_identity_int32", IDENTITY, onnx_saver=save_identity)
    for i in range(3):
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


def run(examples, url, port8000):
    failed = sum(run_supported(examples, url, script, args, port8000) for script, args in SUPPORTED)
    for script, why in sorted(REPORTED.items()):
        ok, tail = run_one(examples, url, script, [])
        print("%s: %s (%s)" % ("PASS" if ok else "NOT SUPPORTED", script, why))
    return failed + run_supported(examples, url, LAST[0], LAST[1], port8000)


def main():
    if sys.argv[1] == "setup":
        setup(sys.argv[2])
        return 0
    return 1 if run(sys.argv[2], sys.argv[3], "--port8000" in sys.argv) else 0


if __name__ == "__main__":
    sys.exit(main())
