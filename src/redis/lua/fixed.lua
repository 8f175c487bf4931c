-- Fixed window. The client splits the instant into the window
-- k = floor((now - origin)/W), as limbs kh kl, and the offset o in it, and
-- sends  mode kh kl o L c W.  State "f<tag> kh kl o count": the window of the
-- latest admit, its offset, and the units admitted in that window.
-- Exact for L < 2^53 and W < 2^53, any int64 instant.
local function fixed_leaf(v, arg, tag)
  local mode, kh, kl, o = arg(), arg(), arg(), arg()
  local L, c, W = arg(), arg(), arg()
  local count = 0
  if v then
    local f, n = fields(v, tag)
    if n ~= 4 then corrupt('fixed fields') end
    local ph, pl, po, pn = f[1], f[2], f[3], f[4]
    check_limbs(ph, pl)
    if po < 0 or po >= W or pn < 1 or pn > L then corrupt('fixed count') end
    if before(kh, kl, ph, pl) or (kh == ph and kl == pl and o < po) then kh, kl, o = ph, pl, po end
    if kh == ph and kl == pl then count = pn end -- the same window: keep the count
  end
  if mode ~= 1 or c > L - count then return false end
  return true, fmt('%s %d %d %d %d', tag, kh, kl, o, count + c), W - o + 1
end
