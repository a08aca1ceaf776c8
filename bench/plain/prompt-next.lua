-- bench/serve.sh: which prompt, if any, a random user should see now.
dofile(os.getenv("BENCH_LUA_DIR") .. "/serve-requests.lua")
request = function()
    return bench_request("GET", "/v1/users/" .. random_user() .. "/prompts/next")
end
