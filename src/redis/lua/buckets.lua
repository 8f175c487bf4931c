-- Sliding window with N buckets of B = W/N ticks. Sends
-- mode jh jl o L c N W  with j = floor(now/B) as limbs and o = now - j*B.
-- State "b<tag>" jh jl o c1 ... cN: the sub-window of the latest admit, its
-- offset, and the counts of the N sub-windows ending with it, oldest first.
-- Exact for L < 2^53 and W < 2^53. Each count is at most L, and the
-- sub-windows after the oldest non-empty one hold fewer than L (what admits
-- and reports leave). Mode 2, a report: c (sent as at most L + 1) is added
-- to the newest sub-window, which holds at most L; then, while the
-- sub-windows after the oldest non-empty one hold L or more, it is emptied.
--! leaf b buckets_leaf 64
local function buckets_leaf(v, b, pos, tag)
  local mode, jh, jl, o, L, c, N, W, nxt = struct.unpack('<dddddddd', b, pos)
  jh, jl, o = shifted(jh, jl, o, W / N)
  local counts, gap = nil, N
  if v then
    if #v ~= 9 + 8 * (N + 3) then corrupt('buckets length') end
    local f = {}
    read_doubles(v, 10, N + 3, f)
    if not (limbs_ok(f[1], f[2]) and int_in(f[3], 0, W / N - 1) and f[N + 3] >= 1) then corrupt('buckets offset') end
    local rest = -1 -- the units after the oldest non-empty sub-window
    for i = 4, N + 3 do
      if not int_in(f[i], 0, L) then corrupt('buckets counts') end
      if rest >= 0 then rest = rest + f[i] elseif f[i] > 0 then rest = 0 end
      if rest > L - 1 then corrupt('buckets counts') end
    end
    if before(jh, jl, f[1], f[2]) or (jh == f[1] and jl == f[2] and o < f[3]) then jh, jl, o = f[1], f[2], f[3] end
    gap = elapsed(jh, jl, f[1], f[2]) -- sub-windows since the latest admit
    if gap < N then counts = f end
  end
  local in_window = 0
  if counts then for i = 4 + gap, N + 3 do in_window = in_window + counts[i] end end
  local fits = c <= L - in_window
  if mode ~= 2 and (mode ~= 1 or not fits) then return false, nil, 0, nxt end
  local out = {jh, jl, o}
  for i = 1, N do
    local x = 0
    if counts and i + gap <= N then x = counts[i + gap + 3] end
    if i == N then
      if mode == 2 and c > L - x then x = L else x = x + c end
    end
    out[i + 3] = x
  end
  if mode == 2 then -- empty the oldest sub-windows the later ones make irrelevant
    -- `rest`, the units after the oldest non-empty sub-window, stays below
    -- 2L (under L before, plus at most L): exact, where the total might not.
    local oldest, rest = nil, 0
    for i = 4, N + 3 do
      if oldest then rest = rest + out[i] elseif out[i] > 0 then oldest = i end
    end
    while oldest and oldest < N + 3 and rest >= L do
      out[oldest] = 0
      local nxt = nil
      for i = oldest + 1, N + 3 do
        if out[i] > 0 then nxt = i break end
      end
      oldest = nxt
      if oldest then rest = rest - out[oldest] end
    end
  end
  return fits, write_doubles(tag, out, N + 3), W - o + 1, nxt
end
