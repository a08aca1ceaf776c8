-- bench/serve.sh: the framework's minimal route (Sources/ServeFloor), with the same headers as the rest.
dofile(os.getenv("BENCH_LUA_DIR") .. "/serve-requests.lua")
request = function()
    return bench_request("GET", "/floor")
end
