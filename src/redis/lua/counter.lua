-- Sliding window counter. The client splits the instant into the window
-- k = floor(now/W) (limbs kh kl) and the offset o, and sends
-- mode kh kl o L W c.  State "c<tag>" kh kl o prev curr at the latest admit.
-- The one product of two state-dependent numbers, prev*(W - o) <= R*W, is
-- compared exactly with Dekker's two-product. Exact for L < 2^53, W < 2^53.
-- `prev` may exceed L after a reconfiguration that narrowed the window or
-- the limit (reconfigure.hpp charges the old windows to the new ones): any
-- count below 2^53 is read. Mode 2, a report: curr becomes min(curr + c,
-- C) with C = max(L, min(L*W, 2^52)) (c sent as at most C + 1); L*W as a
-- double is exact up to 2^53 and at least 2^52 beyond, so C is exact.
local function split27(a) -- Veltkamp split, 2^27 + 1
  local t = 134217729 * a
  local hi = t - (t - a)
  return hi, a - hi
end
local function two_prod(a, b) -- a*b == p + e exactly
  local p = a * b
  local ah, al = split27(a)
  local bh, bl = split27(b)
  return p, ((ah * bh - p) + ah * bl + al * bh) + al * bl
end
local function prod_le(a, b, x, y) -- a*b <= x*y, exactly
  local p1, e1 = two_prod(a, b)
  local p2, e2 = two_prod(x, y)
  return p1 < p2 or (p1 == p2 and e1 <= e2)
end

--! leaf c counter_leaf 56
local function counter_leaf(v, b, pos, tag)
  local mode, kh, kl, o, L, W, c, nxt = struct.unpack('<ddddddd', b, pos)
  kh, kl, o = shifted(kh, kl, o, W)
  local C = math.max(L, math.min(L * W, P52)) -- the most a report leaves in curr
  local prev, curr = 0, 0
  if v then
    if #v ~= 49 then corrupt('counter length') end
    local ph, pl, po, pp, pc = struct.unpack('<ddddd', v, 10)
    if not (limbs_ok(ph, pl) and int_in(po, 0, W - 1) and int_in(pp, 0, P53 - 1) and int_in(pc, 1, C)) then
      corrupt('counter counts')
    end
    prev, curr = pp, pc
    if before(kh, kl, ph, pl) or (kh == ph and kl == pl and o < po) then kh, kl, o = ph, pl, po end
    local dk = elapsed(kh, kl, ph, pl) -- windows passed (saturates)
    if dk == 1 then prev, curr = curr, 0 elseif dk > 1 then prev, curr = 0, 0 end
  end
  if mode ~= 1 and mode ~= 2 then return false, nil, 0, nxt end
  local R = L - curr - c -- room left in whole units
  local fits = R >= 0 and (prev == 0 or prod_le(prev, W - o, R, W))
  if mode == 2 then
    local n = curr + c
    if n > C then n = C end
    return fits, struct.pack('<c9ddddd', tag, kh, kl, o, prev, n), 2 * W - o + 2, nxt
  end
  if fits then
    return true, struct.pack('<c9ddddd', tag, kh, kl, o, prev, curr + c), 2 * W - o + 2, nxt
  end
  return false, nil, 0, nxt
end
