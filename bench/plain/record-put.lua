-- bench/serve.sh: a new record under a key no other request has, for a random user.
dofile(os.getenv("BENCH_LUA_DIR") .. "/serve-requests.lua")
request = function()
    return bench_request("PUT", "/v1/users/" .. random_user() .. "/records/commands/" .. fresh_id(),
        '{"phrase": "lights on", "seconds": 2}')
end
