-- Sliding log. Sends  mode L c W  (the instant is the request's). State
-- "s<tag>" h1 l1 n1 h2 l2 n2 ...: runs of units admitted at one instant,
-- oldest first, strictly increasing, the last at the latest admit. A unit
-- admitted at t is in the window at e iff e - t < W. Exact for L < 2^53,
-- W < 2^53, any int64 instant. Each run holds at most L units, and the
-- runs after the first fewer than L (what admits and reports leave). Mode
-- 2, a report: c units (sent as at most L + 1) join the run at the instant,
-- which holds at most L; then, while the runs after the first hold L or
-- more, the first is dropped (it changes no decision: semantics.md).
--! leaf s log_leaf 32
local function log_leaf(v, b, pos, tag, th, tl)
  local mode, L, c, W, nxt = struct.unpack('<dddd', b, pos)
  local f, n = {}, 0
  local eh, el = th, tl
  if v then
    n = (#v - 9) / 8
    if n < 3 or n % 3 ~= 0 then corrupt('log length') end
    read_doubles(v, 10, n, f)
    local rest = 0
    for i = 1, n, 3 do
      if not (limbs_ok(f[i], f[i + 1]) and int_in(f[i + 2], 1, L)) then corrupt('log units') end
      if i > 1 and not before(f[i - 3], f[i - 2], f[i], f[i + 1]) then corrupt('log order') end
      if i > 1 then rest = rest + f[i + 2] end
      if rest > L - 1 then corrupt('log units') end
    end
    if before(eh, el, f[n - 2], f[n - 1]) then eh, el = f[n - 2], f[n - 1] end
  end
  local first, in_window = 1, 0
  for i = 1, n, 3 do
    if elapsed(eh, el, f[i], f[i + 1]) >= W then first = i + 3 else in_window = in_window + f[i + 2] end
  end
  local fits = c <= L - in_window
  if mode ~= 2 and (mode ~= 1 or not fits) then return false, nil, 0, nxt end
  local out, k = {}, 0
  for i = first, n do
    k = k + 1
    out[k] = f[i]
  end
  local add = c
  if n >= first and f[n - 2] == eh and f[n - 1] == el then
    if mode == 2 and add > L - f[n] then add = L - f[n] end
    out[k] = f[n] + add
  else
    if mode == 2 and add > L then add = L end
    out[k + 1], out[k + 2], out[k + 3] = eh, el, add
    k = k + 3
  end
  if mode == 2 then -- drop the first runs the later ones make irrelevant
    -- `rest`, the units after the first run, stays below 2L (under L
    -- before, plus at most L): exact, where the whole log's might not be.
    local rest = 0
    for i = 6, k, 3 do rest = rest + out[i] end
    local s = 1
    while s + 3 <= k and rest >= L do
      s = s + 3
      rest = rest - out[s + 2]
    end
    if s > 1 then
      local kept = {}
      for i = s, k do kept[i - s + 1] = out[i] end
      out, k = kept, k - s + 1
    end
  end
  return fits, write_doubles(tag, out, k), W + 1, nxt
end
