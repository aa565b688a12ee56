-- wrk script: unique POST bodies when BENCH_POST is set, and a JSON summary line at the end.
local counter = 0
local post_path = os.getenv("BENCH_POST")
local prefix = os.getenv("BENCH_PREFIX") or "b"
local threads = 0

setup = function(thread)
    threads = threads + 1
    thread:set("thread_id", threads)
end

request = function()
    if post_path == nil or post_path == "" then
        return wrk.format(nil)
    end
    counter = counter + 1
    local name = string.format("%s-%d-%d", prefix, thread_id or 0, counter)
    local body = string.format('{"name":"%s","secretPath":"apps/%s"}', name, name)
    -- Explicit headers replace wrk's -H ones: carry those over.
    local headers = {["Content-Type"] = "application/json"}
    for key, value in pairs(wrk.headers) do
        headers[key] = value
    end
    return wrk.format("POST", post_path, headers, body)
end

done = function(summary, latency, requests)
    local errors = summary.errors
    io.write(string.format(
        'BENCH_JSON {"requests":%d,"duration_us":%d,"p50_us":%d,"p99_us":%d,"max_us":%d,' ..
        '"connect_errors":%d,"read_errors":%d,"write_errors":%d,"status_errors":%d,"timeouts":%d}\n',
        summary.requests, summary.duration, latency:percentile(50), latency:percentile(99),
        latency.max, errors.connect, errors.read, errors.write, errors.status, errors.timeout))
end

local shown = false
response = function(status, headers, body)
    if status >= 300 and not shown then
        shown = true
        io.write("BENCH_FIRST_ERROR ", status, " ", body, "\n")
    end
end
