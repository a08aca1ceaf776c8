-- bench/serve.sh: a random user's record, the one bench/serve.sh put for each user before the run.
dofile(os.getenv("BENCH_LUA_DIR") .. "/serve-requests.lua")
request = function()
    return bench_request("GET", "/v1/users/" .. random_user() .. "/records/commands/seed")
end
