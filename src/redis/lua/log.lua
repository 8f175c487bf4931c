-- Sliding log. Sends  mode L c W  (the instant is the request's). State
-- "s<tag>" h1 l1 n1 h2 l2 n2 ...: runs of units admitted at one instant,
-- oldest first, strictly increasing, the last at the latest admit. A unit
-- admitted at t is in the window at e iff e - t < W. Exact for L < 2^53,
-- W < 2^53, any int64 instant.
local function log_leaf(v, b, pos, tag, th, tl)
  local mode, L, c, W, nxt = struct.unpack('<dddd', b, pos)
  local f, n = {}, 0
  local eh, el = th, tl
  if v then
    n = (#v - 9) / 8
    if n < 3 or n % 3 ~= 0 then corrupt('log length') end
    read_doubles(v, 10, n, f)
    local total = 0
    for i = 1, n, 3 do
      if not (limbs_ok(f[i], f[i + 1]) and int_in(f[i + 2], 1, L)) then corrupt('log units') end
      if i > 1 and not before(f[i - 3], f[i - 2], f[i], f[i + 1]) then corrupt('log order') end
      total = total + f[i + 2]
      if total > L then corrupt('log units') end
    end
    if before(eh, el, f[n - 2], f[n - 1]) then eh, el = f[n - 2], f[n - 1] end
  end
  local first, in_window = 1, 0
  for i = 1, n, 3 do
    if elapsed(eh, el, f[i], f[i + 1]) >= W then first = i + 3 else in_window = in_window + f[i + 2] end
  end
  if mode ~= 1 or c > L - in_window then return false, nil, 0, nxt end
  local out, k = {}, 0
  for i = first, n do
    k = k + 1
    out[k] = f[i]
  end
  if n >= first and f[n - 2] == eh and f[n - 1] == el then
    out[k] = f[n] + c
  else
    out[k + 1], out[k + 2], out[k + 3] = eh, el, c
    k = k + 3
  end
  return true, write_doubles(tag, out, k), W + 1, nxt
end
