-- What bench/serve.sh's wrk scripts share: the server key, a random bench user per request, and ids
-- that no other request of the run uses (a thread number, a counter and the start time).
local users = tonumber(os.getenv("BENCH_USERS"))
local authorization = os.getenv("BENCH_AUTHORIZATION")
local started = os.time()
local threads = 0
local sent = 0

function setup(thread)
    thread:set("thread_number", threads)
    threads = threads + 1
end

function init(arguments)
    math.randomseed(started * 31 + thread_number)
end

function random_user()
    return "bench-user-" .. math.random(users)
end

function fresh_id()
    sent = sent + 1
    return "w" .. started .. "-" .. thread_number .. "-" .. sent
end

function bench_request(method, path, body)
    local headers = { ["Authorization"] = authorization }
    if body then headers["Content-Type"] = "application/json" end
    return wrk.format(method, path, headers, body)
end
