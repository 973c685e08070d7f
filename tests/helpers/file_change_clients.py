#!/usr/bin/env python3
"""file_change_clients.py: the HTTP clients of test_file_change.sh (binary outputs, so answers compare as bytes).

  answer PORT STAGE MODEL GEN  one request with MODEL's row (STAGE/inputs.json); its outputs must be
                               STAGE/expect.json's MODEL GEN (relative 1e-5); prints the SHA-256 of their bytes
  run PORT STAGE OUT THREADS   THREADS threads send requests (each thread every model in turn) until OUT/stop
                               exists; each thread logs "MODEL SHA256" per answer to OUT/answers-T.log and
                               every failed request to OUT/failed-T.log
  check OUT REF...             every logged answer is one of the references REF (MODEL:GEN:SHA256), each
                               thread saw each model's generations in the order given (old, then new, ...),
                               and no request failed
"""
import glob
import hashlib
import json
import os
import struct
import sys
import threading
import urllib.error
import urllib.request


def infer(port, model, spec):
    """POST one row; the outputs' raw bytes (the request must succeed)."""
    body = json.dumps({"inputs": [{"name": spec["input"], "shape": [1, len(spec["row"])], "datatype": "FP32",
                                   "data": spec["row"]}],
                       "parameters": {"binary_data_output": True}}).encode()
    req = urllib.request.Request("http://127.0.0.1:%s/v2/models/%s/infer" % (port, model), data=body,
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=60) as r:
        data = r.read()
        hlen = int(r.headers["Inference-Header-Content-Length"])
    header = json.loads(data[:hlen])
    assert header["outputs"][0]["parameters"]["binary_data_size"] == len(data) - hlen, header
    return data[hlen:]


def answer(port, stage, model, gen):
    spec = json.load(open(os.path.join(stage, "inputs.json")))[model]
    want = json.load(open(os.path.join(stage, "expect.json")))[model][gen]
    raw = infer(port, model, spec)
    got = struct.unpack("<%df" % (len(raw) // 4), raw)
    scale = max(1.0, max(abs(v) for v in want))
    err = max(abs(a - b) for a, b in zip(got, want)) if len(got) == len(want) else float("inf")
    if err > 1e-5 * scale:
        sys.exit("%s: the answer is not the %s files' (max error %g): %s, want %s" % (model, gen, err, got, want))
    print(hashlib.sha256(raw).hexdigest())


def run(port, stage, out, nthreads):
    specs = json.load(open(os.path.join(stage, "inputs.json")))
    failed = []

    def client(t):
        log, n = [], 0
        # OUT gone: the test ended without stopping its clients (it failed).
        while os.path.isdir(out) and (not os.path.exists(os.path.join(out, "stop")) or n == 0):
            for model, spec in sorted(specs.items()):
                try:
                    log.append("%s %s" % (model, hashlib.sha256(infer(port, model, spec)).hexdigest()))
                except (urllib.error.URLError, OSError, ValueError, KeyError, AssertionError) as e:
                    body = e.read().decode(errors="replace") if isinstance(e, urllib.error.HTTPError) else ""
                    failed.append("thread %d, %s: %r %s" % (t, model, e, body))
            n += 1
        if os.path.isdir(out):
            with open(os.path.join(out, "answers-%d.log" % t), "w") as f:
                f.write("\n".join(log) + "\n")

    threads = [threading.Thread(target=client, args=(t,)) for t in range(nthreads)]
    [t.start() for t in threads]
    [t.join() for t in threads]
    if not os.path.isdir(out):
        sys.exit(1)
    with open(os.path.join(out, "failed.log"), "w") as f:
        f.write("".join(x + "\n" for x in failed))
    print("%d threads: %d failed requests" % (nthreads, len(failed)))
    sys.exit(1 if failed else 0)


def check(out, refs):
    gens = {}   # model -> [(gen, hash), ...] in order
    for r in refs:
        model, gen, digest = r.split(":")
        gens.setdefault(model, []).append((gen, digest))
    failed = open(os.path.join(out, "failed.log")).read()
    if failed:
        sys.exit("failed requests:\n" + failed[:2000])
    counts = {}
    for path in sorted(glob.glob(os.path.join(out, "answers-*.log"))):
        at = {}
        for line in open(path).read().splitlines():
            model, digest = line.split()
            order = [d for g, d in gens[model]]
            if digest not in order:
                sys.exit("%s: an answer of %s matches none of its files' (%s)" % (path, model, digest))
            k = order.index(digest)
            if k < at.get(model, 0):
                sys.exit("%s: %s answered with its %s files after its %s ones" %
                         (path, model, gens[model][k][0], gens[model][at[model]][0]))
            at[model] = k
            key = "%s %s" % (model, gens[model][k][0])
            counts[key] = counts.get(key, 0) + 1
    print("answers, every one the files' of its moment: " + ", ".join("%s %d" % kv for kv in sorted(counts.items())))


def main():
    cmd = sys.argv[1]
    if cmd == "answer":
        answer(*sys.argv[2:6])
    elif cmd == "run":
        run(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]))
    elif cmd == "check":
        check(sys.argv[2], sys.argv[3:])
    else:
        sys.exit("unknown command " + cmd)


if __name__ == "__main__":
    main()
