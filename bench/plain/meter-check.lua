-- bench/serve.sh: the gate before a paid call, for a random user.
dofile(os.getenv("BENCH_LUA_DIR") .. "/serve-requests.lua")
request = function()
    return bench_request("GET", "/v1/users/" .. random_user() .. "/meters/api_minutes/check?amount=1")
end
