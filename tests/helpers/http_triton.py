#!/usr/bin/env python3
"""http_triton.py: Triton's /config and /stats endpoints and the refusal of unimplemented
request parameters, checked against a running inferd serving the demo model.

usage: http_triton.py URL MODEL_DIR EXAMPLE_JSON"""
import json
import sys
import urllib.error
import urllib.request

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def call(url, method="GET", body=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method)
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, json.loads(r.read() or b"null")
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"null")


def test_config(base, model):
    status, c = call(base + "/config")
    check(status == 200, "GET config: status %d" % status)
    check(c.get("name") == model["name"], "config name: %r" % c.get("name"))
    check(c.get("max_batch_size") == model["max_batch_size"], "config max_batch_size: %r" % c.get("max_batch_size"))
    for key, want in (("input", model["inputs"]), ("output", model["outputs"])):
        got = c.get(key, [])
        check(len(got) == len(want), "config %s: %r" % (key, got))
        for g, w in zip(got, want):
            check(g.get("name") == w["name"] and g.get("data_type") == "TYPE_" + w["datatype"]
                  and g.get("dims") == w["dims"], "config %s entry %r for %r" % (key, g, w))
    check(c["output"][0].get("labels") == model["labels"], "config output labels: %r" % c["output"][0].get("labels"))
    b, want = c.get("dynamic_batching", {}), model["dynamic_batching"]
    check(b.get("preferred_batch_size") == want["preferred_batch_sizes"]
          and b.get("max_queue_delay_microseconds") == want["max_queue_delay_us"]
          and b.get("default_queue_policy", {}).get("max_queue_size") == want["max_queue_size"]
          and b.get("default_queue_policy", {}).get("default_timeout_microseconds") == want["default_timeout_us"],
          "config dynamic_batching %r, model.json %r" % (b, want))


def stats(base):
    status, s = call(base + "/stats")
    check(status == 200, "GET stats: status %d" % status)
    check(len(s.get("model_stats", [])) == 1, "stats: %r" % s)
    return s["model_stats"][0]


def test_stats(base, name, example):
    s0 = stats(base)
    check(s0["name"] == name and s0["version"] == "1", "stats name/version: %r" % s0)
    two = json.loads(json.dumps(example))
    inp = two["inputs"][0]
    inp["shape"][0] = 2
    inp["data"] = list(inp["data"]) * 2
    for body in (example, two):
        status, r = call(base + "/infer", "POST", body)
        check(status == 200, "infer for stats: %d %r" % (status, r))
    s1 = stats(base)
    st0, st1 = s0["inference_stats"], s1["inference_stats"]
    check(s1["inference_count"] - s0["inference_count"] == 3, "inference_count grew by %d, want 3 rows"
          % (s1["inference_count"] - s0["inference_count"]))
    grew = s1["execution_count"] - s0["execution_count"]
    check(1 <= grew <= 2, "execution_count grew by %d, want 1 or 2 batches" % grew)
    check(st1["success"]["count"] - st0["success"]["count"] == 2, "success.count: %r -> %r" % (st0["success"], st1["success"]))
    check(st1["success"]["ns"] > st0["success"]["ns"], "success.ns did not grow")
    check(st1["compute_infer"]["count"] == s1["execution_count"], "compute_infer.count is not execution_count")
    check(st1["queue"]["count"] == st1["success"]["count"], "queue.count: %r" % st1["queue"])
    for k in ("success", "fail", "queue", "compute_input", "compute_infer", "compute_output"):
        check(set(st1[k]) == {"count", "ns"}, "inference_stats.%s: %r" % (k, st1[k]))


def refused(base, body, words):
    status, r = call(base + "/infer", "POST", body)
    msg = (r or {}).get("error", "")
    check(status == 400 and all(w in msg for w in words), "want 400 naming %r, got %d %r" % (words, status, r))


def test_parameters(base, example):
    def with_(params=None, out_params=None, in_params=None):
        b = json.loads(json.dumps(example))
        if params is not None:
            b["parameters"] = params
        if out_params is not None:
            b["outputs"] = [{"name": "logits", "parameters": out_params}]
        if in_params is not None:
            b["inputs"][0]["parameters"] = in_params
        return b
    refused(base, with_({"priority": 1}), ["'priority'", "not implemented"])
    refused(base, with_({"sequence_id": 7, "timeout_us": 1000000}), ["'sequence_id'"])
    refused(base, with_({"priority": 1, "sequence_start": True}), ["'priority'", "'sequence_start'"])
    refused(base, with_(out_params={"classification": 0}), ["output 'logits'", "'classification'",
                                                            "positive integer"])
    refused(base, with_(in_params={"device_id": 0}), ["inputs[0]", "'device_id'"])
    status, r = call(base + "/infer", "POST", with_({"timeout_us": 10000000, "binary_data_output": False},
                                                      {"binary_data": False}))
    check(status == 200, "implemented parameters refused: %d %r" % (status, r))


def test_classification(base, model, example):
    """Triton's classification extension: the top k of each row as "value:index:label", largest first,
    checked against numpy's ordering of the same model's numeric answer."""
    body = json.loads(json.dumps(example))
    body["inputs"][0]["data"] = body["inputs"][0]["data"] * 2
    body["inputs"][0]["shape"][0] = 2 * body["inputs"][0]["shape"][0]
    base = "%s/v2/models/%s" % (base, model["name"])
    status, plain = call(base + "/infer", "POST", dict(body, outputs=[{"name": "logits"}]))
    status2, cls = call(base + "/infer", "POST",
                        dict(body, outputs=[{"name": "logits", "parameters": {"classification": 3}}]))
    check(status == 200 and status2 == 200, "classification: %d %d %r" % (status, status2, cls))
    if status != 200 or status2 != 200:
        return
    rows = plain["outputs"][0]["shape"][0]
    logits = [plain["outputs"][0]["data"][r * 10:(r + 1) * 10] for r in range(rows)]
    out = cls["outputs"][0]
    check(out["datatype"] == "BYTES" and out["shape"] == [rows, 3], "classified output: %r" % out)
    for r in range(rows):
        order = sorted(range(10), key=lambda i: (-logits[r][i], i))[:3]
        want = ["%f:%d:%s" % (logits[r][i], i, model["labels"][i]) for i in order]
        got = out["data"][r * 3:(r + 1) * 3]
        ok = len(got) == 3 and [g.split(":", 2)[1:] for g in got] == [w.split(":", 2)[1:] for w in want]
        ok = ok and all(abs(float(g.split(":")[0]) - logits[r][i]) < 1e-5 for g, i in zip(got, order))
        check(ok, "row %d top 3: %r, numpy %r" % (r, got, want))
    status, big = call(base + "/infer", "POST",
                       dict(body, outputs=[{"name": "logits", "parameters": {"classification": 50}}]))
    check(status == 200 and big["outputs"][0]["shape"] == [rows, 10], "k past the classes is capped: %r" % big)


def main():
    url, model_dir, example_path = sys.argv[1:4]
    model = json.load(open(model_dir + "/model.json"))
    example = json.load(open(example_path))
    test_classification(url, model, example)
    base = "%s/v2/models/%s" % (url, model["name"])
    test_config(base, model)
    test_stats(base, model["name"], example)
    test_parameters(base, example)
    for path in ("/v2/models/nosuch/config", "/v2/models/nosuch/stats"):
        status, _ = call(url + path)
        check(status == 404, "%s: status %d, want 404" % (path, status))
    status, _ = call(base + "/config", "POST", {})
    check(status == 405, "POST config: status %d, want 405" % status)
    print("http_triton: %d failure(s)" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
