-- wrk script of benchmark 2: every connection alternates POST <run path> and GET <read path>,
-- both with the bearer key; at the end one JSON line with the figures (latency in microseconds).
-- Run: wrk -t2 -c32 -d5s -s bench/lib/wrk-alternate.lua http://127.0.0.1:8000 -- <run path> <read path> <key>

local run_path, read_path, key
local counter = 0

function init(args)
  run_path, read_path, key = args[1], args[2], args[3]
end

function request()
  counter = counter + 1
  if counter % 2 == 1 then
    return wrk.format("POST", run_path, {
      ["Authorization"] = "Bearer " .. key,
      ["Content-Type"] = "application/json",
    }, '{"kwargs":{}}')
  end
  return wrk.format("GET", read_path, { ["Authorization"] = "Bearer " .. key })
end

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    '{"requests":%d,"duration_us":%d,"p50_us":%d,"p90_us":%d,"p99_us":%d,"errors":{"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d}}\n',
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(90), latency:percentile(99),
    e.connect, e.read, e.write, e.status, e.timeout))
end
