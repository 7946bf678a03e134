-- wrk script for bench/node.sh: POST one JSON-RPC request on every call, with the bearer
-- token, and print one machine-readable RESULT line at the end.
-- Inputs (environment): BENCH_BODY (the JSON-RPC request), BENCH_TOKEN_FILE (optional).
-- No per-response Lua hook: wrk's own errors.status counts 4xx/5xx answers without slowing
-- the load generator down.

wrk.method = "POST"
wrk.body = os.getenv("BENCH_BODY")
wrk.headers["Content-Type"] = "application/json"
local token_file = os.getenv("BENCH_TOKEN_FILE")
if token_file and token_file ~= "" then
  local handle = assert(io.open(token_file, "r"))
  wrk.headers["Authorization"] = "Bearer " .. handle:read("*l")
  handle:close()
end

function done(summary, latency, requests)
  local errors = summary.errors
  io.write(string.format(
    "RESULT rps=%.1f p50_us=%d p99_us=%d requests=%d http_errors=%d socket_errors=%d\n",
    summary.requests / (summary.duration / 1e6),
    latency:percentile(50), latency:percentile(99),
    summary.requests, errors.status, errors.connect + errors.read + errors.write + errors.timeout))
end
