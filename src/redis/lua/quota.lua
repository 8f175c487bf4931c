-- Quota: N units in all, never refilled. Sends  mode N c.  State
-- "u<tag>" used (at most 2^53 - 1: more than N after a smaller quota took
-- over). Never fresh again once used, so written without expiry.
-- Exact for N < 2^53. Mode 2, a report: used becomes min(used + c, N) (c
-- sent as at most N + 1).
--! leaf u quota_leaf 24
local function quota_leaf(v, b, pos, tag)
  local mode, N, c, nxt = struct.unpack('<ddd', b, pos)
  local used = 0
  if v then
    if #v ~= 17 then corrupt('quota length') end
    used = struct.unpack('<d', v, 10)
    -- Past N only when an override's removal or a redefinition carried a
    -- larger quota's units over: denied until refunded below N.
    if not int_in(used, 1, 9007199254740991) then corrupt('quota used') end
  end
  if mode == 2 then
    local n = used
    if used < N then
      n = used + c
      if n > N then n = N end
    end
    return c <= N - used, struct.pack('<c9d', tag, n), -1, nxt
  end
  if mode ~= 1 or c > N - used then return false, nil, 0, nxt end
  return true, struct.pack('<c9d', tag, used + c), -1, nxt
end
