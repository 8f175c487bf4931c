-- wrk: spread requests over N keys (?key=k0 .. k<N-1>) on the URL's path.
-- usage: wrk ... -s bench/http/keys.lua URL -- 10000
local n, i = 10000, 0
local path = "/"
function init(args)
  if args[1] then n = tonumber(args[1]) end
  path = wrk.path
end
function request()
  i = i + 1
  return wrk.format("GET", path .. "?key=k" .. (i % n))
end
