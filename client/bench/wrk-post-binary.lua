-- wrk-post-binary.lua: POST a KServe v2 request with the binary tensor data extension.
--
--   WRK_BODY=body.bin WRK_HEADER_LEN=N wrk -t1 -c16 -d5s -s client/bench/wrk-post-binary.lua \
--       http://127.0.0.1:8000/v2/models/fashion-mlp/infer
--
-- WRK_BODY holds the whole body (the JSON header, then the tensors' raw bytes), WRK_HEADER_LEN the
-- JSON header's length (the Inference-Header-Content-Length value); wrk's Lua has no string.pack,
-- so the body is made beforehand (client/bench/make_binary_body.py).  Same closing line as
-- wrk-post.lua: "wrk-json: {...}".

local f = assert(io.open(assert(os.getenv("WRK_BODY"), "WRK_BODY not set"), "rb"))
wrk.method = "POST"
wrk.body = f:read("*a")
f:close()
wrk.headers["Content-Type"] = "application/octet-stream"
wrk.headers["Inference-Header-Content-Length"] = assert(os.getenv("WRK_HEADER_LEN"), "WRK_HEADER_LEN not set")

function done(summary, latency, requests)
   local e = summary.errors
   io.write(string.format(
      'wrk-json: {"tool":"wrk","binary":true,"body_bytes":%d,"duration_s":%.3f,' ..
      '"requests":%d,"requests_per_s":%.1f,"errors":{"connect":%d,"read":%d,"write":%d,' ..
      '"status":%d,"timeout":%d},"latency_us":{"p50":%.1f,"p90":%.1f,"p99":%.1f,"max":%.1f,' ..
      '"mean":%.1f}}\n',
      #wrk.body, summary.duration / 1e6, summary.requests,
      summary.requests / (summary.duration / 1e6), e.connect, e.read, e.write, e.status,
      e.timeout, latency:percentile(50), latency:percentile(90), latency:percentile(99),
      latency.max, latency.mean))
end
