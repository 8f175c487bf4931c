-- Fixed window. The client splits the instant into the window
-- k = floor((now - origin)/W), as limbs kh kl, and the offset o in it, and
-- sends  mode kh kl o L c W.  State "f<tag>" kh kl o count: the window of the
-- latest admit, its offset, and the units admitted in that window.
-- Exact for L < 2^53 and W < 2^53, any int64 instant. Mode 2, a report:
-- the count becomes min(count + c, L), or stays when already past L (c
-- sent as at most L + 1).
--! leaf f fixed_leaf 56
local function fixed_leaf(v, b, pos, tag)
  local mode, kh, kl, o, L, c, W, nxt = struct.unpack('<ddddddd', b, pos)
  kh, kl, o = shifted(kh, kl, o, W)
  local count = 0
  if v then
    if #v ~= 41 then corrupt('fixed length') end
    local ph, pl, po, pn = struct.unpack('<dddd', v, 10)
    -- Past L only when a larger limit's units were carried over (an
    -- override or a redefinition): denied until the window ends.
    if not (limbs_ok(ph, pl) and int_in(po, 0, W - 1) and int_in(pn, 1, P53 - 1)) then corrupt('fixed count') end
    if before(kh, kl, ph, pl) or (kh == ph and kl == pl and o < po) then kh, kl, o = ph, pl, po end
    if kh == ph and kl == pl then count = pn end -- the same window: keep the count
  end
  if mode == 2 then
    local n = count + c
    if c >= L - count then n = math.max(count, L) end -- saturates at L, never lowers a count past it
    return c <= L - count, struct.pack('<c9dddd', tag, kh, kl, o, n), W - o + 1, nxt
  end
  if mode ~= 1 or c > L - count then return false, nil, 0, nxt end
  return true, struct.pack('<c9dddd', tag, kh, kl, o, count + c), W - o + 1, nxt
end
