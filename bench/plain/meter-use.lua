-- bench/serve.sh: one minute used by a random user, under an id no other request has.
dofile(os.getenv("BENCH_LUA_DIR") .. "/serve-requests.lua")
request = function()
    return bench_request("POST", "/v1/users/" .. random_user() .. "/meters/api_minutes/use",
        '{"amount": 1, "id": "' .. fresh_id() .. '"}')
end
