-- Quota: N units in all, never refilled. Sends  mode N c.  State
-- "u<tag> used". Never fresh again once used, so written without expiry.
-- Exact for N < 2^53.
local function quota_leaf(v, arg, tag)
  local mode, N, c = arg(), arg(), arg()
  local used = 0
  if v then
    local f, n = fields(v, tag)
    if n ~= 1 or f[1] < 1 or f[1] > N then corrupt('quota used') end
    used = f[1]
  end
  if mode ~= 1 or c > N - used then return false end
  return true, fmt('%s %d', tag, used + c), -1
end
