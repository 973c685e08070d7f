#!/usr/bin/env python3
"""shm_output_dims.py SOCKET URL INFERCTL IPC_CLIENT MODELS TMP: the checks of test_shm_output_dims.sh.

MODELS holds make_conv_dims_onnx.py's convdims (stride 2) and split4, served by a daemon in explicit
mode at SOCKET (shared memory) and URL (HTTP, for the reload).  Over shared memory, through inferctl,
the C client (ipc_client outdims: inferd_output_dims, then inferd_run and inferd_submit with outputs
given without dims) and the Python client:
 - convdims at T = 1, 4, 7 and 64 (rows 1 to 3): y is exactly [rows, 3, ceil(T/2)], z [rows, 2, T],
   and their values are onnxruntime's;
 - split4 at T = 3 (2T not a multiple of 4) is refused with the daemon's reason naming node 'split4';
   at T = 6 it answers [1, 3, 4];
 - convdims reloaded at stride 3 (same id, same metadata): a Python client that cached T = 7's dims
   answers [1, 3, 3] with the new values by its second request at the latest, never a stale shape.
Exits 77 when onnxruntime or the Python client cannot be imported.
"""
import json
import math
import os
import re
import subprocess
import sys
import urllib.request

import numpy as np

try:
    import onnxruntime as ort
    import inferd
except ImportError as e:
    print("SKIP: %s" % e)
    sys.exit(77)

SOCK, URL, INFERCTL, IPC_CLIENT, MODELS, TMP = sys.argv[1:7]
failures = []


def check(cond, what):
    """Record a failure (and say so) unless cond."""
    if not cond:
        failures.append(what)
        print("FAIL: %s" % what)
    return cond


def reference(model, x):
    """onnxruntime's outputs of MODELS/model for x, by name."""
    sess = ort.InferenceSession(os.path.join(MODELS, model, "model.onnx"), providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    return dict(zip(names, sess.run(names, {"x": x})))


def close(got, want):
    """Same shape, values within float32 rounding of onnxruntime's."""
    return got.shape == want.shape and np.allclose(got, want, rtol=1e-5, atol=1e-5)


def parse_inferctl(text):
    """inferctl's printed outputs: {name: array} from 'output NAME DTYPE [dims]' and 'row r: values' lines."""
    outs, name, shape, rows = {}, None, None, []
    for line in text.splitlines() + ["output end FP32 [0]"]:
        m = re.match(r"output (\S+) FP32 \[([0-9, ]+)\]", line)
        if m:
            if name is not None:
                outs[name] = np.array(rows, dtype=np.float32).reshape(shape)
            name, shape, rows = m.group(1), tuple(int(v) for v in m.group(2).split(",")), []
        elif line.startswith("row "):
            rows.append([float(v) for v in line.split(":", 1)[1].split()])
    return outs


def run_inferctl(model, x):
    """inferctl infer MODEL --input x=FILE.npy: (exit status, outputs, stderr)."""
    path = os.path.join(TMP, "x.npy")
    np.save(path, x)
    p = subprocess.run([INFERCTL, "--socket=" + SOCK, "infer", model, "--input", "x=" + path],
                       capture_output=True, text=True, timeout=60)
    return p.returncode, parse_inferctl(p.stdout) if p.returncode == 0 else {}, p.stderr


def run_c(model, x, names):
    """ipc_client outdims: (exit status, dims printed by name, outputs read back by name, stdout)."""
    xin, out = os.path.join(TMP, "x.bin"), os.path.join(TMP, "out.bin")
    x.tofile(xin)
    args = [IPC_CLIENT, SOCK, "outdims", model, xin, out, str(x.shape[0])] + [str(d) for d in x.shape[1:]]
    p = subprocess.run(args, capture_output=True, text=True, timeout=60)
    dims = {line.split()[1]: tuple(int(v) for v in line.split()[2:])
            for line in p.stdout.splitlines() if line.startswith("dims ")}
    outs = {}
    if p.returncode == 0:
        flat, at = np.fromfile(out, dtype=np.float32), 0
        for name in names:
            n = x.shape[0] * math.prod(dims[name])
            outs[name] = flat[at:at + n].reshape((x.shape[0],) + dims[name])
            at += n
        check(at == flat.size, "%s: ipc_client wrote %d values, the outputs' dims make %d" % (model, flat.size, at))
    return p.returncode, dims, outs, p.stdout + p.stderr


def as_dict(result, names):
    """The Python client's answer by output name."""
    return result if isinstance(result, dict) else {names[0]: result}


def convdims_at(client, rows, t, seed):
    """convdims at rows rows and T = t through the three clients."""
    x = np.random.default_rng(seed).uniform(-1, 1, size=(rows, 2, t)).astype(np.float32)
    ref = reference("convdims", x)
    want = {"y": (rows, 3, (t + 1) // 2), "z": (rows, 2, t)}
    check({k: v.shape for k, v in ref.items()} == want, "onnxruntime's shapes at T=%d: %s" % (t, ref))
    rc, outs, err = run_inferctl("convdims", x)
    for name in want:
        check(rc == 0 and name in outs and close(outs[name], ref[name]),
              "inferctl convdims T=%d rows=%d: output %s %s (%s)" % (t, rows, name,
                                                                   outs[name].shape if name in outs else None, err))
    rc, dims, outs, text = run_c("convdims", x, ["y", "z"])
    for name in want:
        check(rc == 0 and dims.get(name) == want[name][1:] and close(outs[name], ref[name]),
              "C client convdims T=%d rows=%d: output %s dims %s (%s)" % (t, rows, name, dims.get(name), text))
    got = as_dict(client.infer("convdims", x), ["y", "z"])
    for name in want:
        check(close(got[name], ref[name]), "Python client convdims T=%d rows=%d: output %s %s" % (
            t, rows, name, got[name].shape))
    print("ok: convdims T=%d rows=%d: y %s z %s through inferctl, the C and the Python client" % (
        t, rows, list(want["y"]), list(want["z"])))


def split4(client):
    """split4 refuses T = 3 naming its node, answers T = 6."""
    x = np.arange(2 * 3, dtype=np.float32).reshape(1, 2, 3)
    rc, _, err = run_inferctl("split4", x)
    check(rc != 0 and "node 'split4'" in err, "inferctl split4 T=3: status %d, %r" % (rc, err))
    rc, _, _, text = run_c("split4", x, ["y"])
    refused = [line for line in text.splitlines() if line.startswith("refused ")]
    check(rc == 3 and len(refused) == 3 and all("node 'split4'" in line and "cannot take" in line for line in refused),
          "C client split4 T=3: status %d: %s" % (rc, text))
    try:
        client.infer("split4", x)
        check(False, "Python client split4 T=3 was answered")
    except inferd.InvalidRequest as e:
        check("node 'split4'" in str(e), "Python client split4 T=3: %s" % e)
    print("ok: split4 T=3 refused naming the node: %s" % err.strip())
    x = np.arange(2 * 6, dtype=np.float32).reshape(1, 2, 6)
    want = x.reshape(1, 3, 4)
    rc, outs, err = run_inferctl("split4", x)
    check(rc == 0 and np.array_equal(outs.get("y"), want), "inferctl split4 T=6: %s %s" % (outs, err))
    rc, dims, outs, text = run_c("split4", x, ["y"])
    check(rc == 0 and dims.get("y") == (3, 4) and np.array_equal(outs["y"], want), "C client split4 T=6: %s" % text)
    check(np.array_equal(client.infer("split4", x), want), "Python client split4 T=6")
    print("ok: split4 T=6 answers [1, 3, 4]")


def reload_stride3(client):
    """Reload convdims at stride 3: the client's cached dims for T = 7 give way to the new model's."""
    x = np.random.default_rng(3).uniform(-1, 1, size=(1, 2, 7)).astype(np.float32)
    check(as_dict(client.infer("convdims", x), ["y", "z"])["y"].shape == (1, 3, 4), "convdims T=7 before the reload")
    subprocess.run([sys.executable, os.path.join(os.path.dirname(__file__), "make_conv_dims_onnx.py"), MODELS, "3"],
                   check=True)
    req = urllib.request.Request(URL + "/v2/repository/models/convdims/load", data=b"{}", method="POST")
    check(urllib.request.urlopen(req, timeout=60).status == 200, "reloading convdims")
    ref = reference("convdims", x)
    answers = []
    for attempt in range(2):
        try:
            answers.append(as_dict(client.infer("convdims", x), ["y", "z"]))
        except inferd.InvalidRequest as e:
            answers.append(None)
            print("note: the first request after the reload was refused (its cached dims were stale): %s" % e)
    for a in answers:
        check(a is None or (close(a["y"], ref["y"]) and close(a["z"], ref["z"])),
              "after the reload: an answer of shape %s, not onnxruntime's %s" % (
                  None if a is None else a["y"].shape, ref["y"].shape))
    check(answers[-1] is not None, "the second request after the reload was refused too")
    print("ok: after the reload at stride 3, T=7 answers y %s" % list(ref["y"].shape))


def main():
    with inferd.connect(SOCK) as client:
        for rows, t, seed in ((1, 1, 1), (2, 4, 2), (3, 7, 3), (1, 64, 4), (2, 7, 5)):
            convdims_at(client, rows, t, seed)
        split4(client)
        reload_stride3(client)
    if failures:
        print("%d failure%s" % (len(failures), "" if len(failures) == 1 else "s"))
        sys.exit(1)


if __name__ == "__main__":
    main()
