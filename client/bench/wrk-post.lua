-- wrk-post.lua: POST a KServe v2 JSON inference body, the way docs/BENCHMARKS.md's HTTP row is measured.
--
--   wrk -t2 -c32 -d5s -s client/bench/wrk-post.lua http://127.0.0.1:8000/v2/models/fashion-mlp/infer
--   wrk -t2 -c32 -d5s -s client/bench/wrk-post.lua http://127.0.0.1:8001/infer   (bench-http-baseline)
--
-- The body is one tensor of WRK_ROWS rows (default 1) of WRK_FLOATS floats (default 784, the
-- demo model's row; 16 reproduces the small-body figure) named WRK_INPUT (default "input"),
-- random in [0, 1) with a fixed seed, printed with 9 significant digits as inferd-bench does.
-- At the end one line "wrk-json: {...}" carries the figures for scripts.

local floats = tonumber(os.getenv("WRK_FLOATS") or "784")
local rows = tonumber(os.getenv("WRK_ROWS") or "1")
local input = os.getenv("WRK_INPUT") or "input"

math.randomseed(1)
local data = {}
for i = 1, floats * rows do
   data[i] = string.format("%.9g", math.random())
end

wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = string.format('{"inputs":[{"name":"%s","shape":[%d,%d],"datatype":"FP32","data":[%s]}]}',
   input, rows, floats, table.concat(data, ","))

function done(summary, latency, requests)
   local e = summary.errors
   io.write(string.format(
      'wrk-json: {"tool":"wrk","floats":%d,"rows":%d,"body_bytes":%d,"duration_s":%.3f,' ..
      '"requests":%d,"requests_per_s":%.1f,"errors":{"connect":%d,"read":%d,"write":%d,' ..
      '"status":%d,"timeout":%d},"latency_us":{"p50":%.1f,"p90":%.1f,"p99":%.1f,"max":%.1f,' ..
      '"mean":%.1f}}\n',
      floats, rows, #wrk.body, summary.duration / 1e6, summary.requests,
      summary.requests / (summary.duration / 1e6), e.connect, e.read, e.write, e.status,
      e.timeout, latency:percentile(50), latency:percentile(90), latency:percentile(99),
      latency.max, latency.mean))
end
