-- GCRA and the token bucket (one state for both: semantics.md, "GCRA").
-- Sends  mode L cq cr sq sr kq kr  with c*W = cq*L + cr, S*W = sq*L + sr
-- and the most debt a report may leave K = kq*L + kr (mode 0: the cost can
-- never be admitted; mode 2: a report, c*W sent as at most K + 1).
-- State "g<tag>" dq dr lh ll: the debt u - last*L = dq*L + dr (0 <= dr < L,
-- dq < 2^52) in 1/L tick, at last = lh*2^32 + ll, the latest admit. An
-- admit leaves at most S*W; a state carried over a reconfiguration may hold
-- more (reconfigure.hpp: a debt the new rate pays off first). Fresh: no key.
-- Exact for floor(S*W/L) < 2^52 ticks and L <= 2^52, any int64 instant. The
-- hot path: written inline.
--! leaf g gcra_leaf 64
local function gcra_leaf(v, b, pos, tag, th, tl)
  local mode, L, cq, cr, sq, sr, kq, kr, nxt = struct.unpack('<dddddddd', b, pos)
  local eh, el, dq, dr = th, tl, 0, 0
  if v then
    if #v ~= 41 then corrupt('gcra length') end
    local pdq, pdr, lh, ll = struct.unpack('<dddd', v, 10)
    if not (pdq % 1 == 0 and pdr % 1 == 0 and pdq >= 0 and pdr >= 0 and pdr < L and pdq < P52 and
            limbs_ok(lh, ll)) then
      corrupt('gcra debt')
    end
    if eh < lh or (eh == lh and el < ll) then eh, el = lh, ll end -- time never runs backwards
    local e = (eh - lh) * P32 + (el - ll)
    if e <= pdq then dq, dr = pdq - e, pdr end
  end
  if mode ~= 1 and mode ~= 2 then return false, nil, 0, nxt end
  local aq, ar = dq + cq, dr + cr -- the debt after admitting
  if ar >= L then aq, ar = aq + 1, ar - L end
  local fits = aq < sq or (aq == sq and ar <= sr)
  if mode == 2 then -- a report: charged whatever it fits, the debt saturating at K
    if aq > kq or (aq == kq and ar > kr) then aq, ar = kq, kr end
    return fits, struct.pack('<c9dddd', tag, aq, ar, eh, el), aq + 1, nxt
  end
  if fits then
    return true, struct.pack('<c9dddd', tag, aq, ar, eh, el), aq + 1, nxt
  end
  return false, nil, 0, nxt
end
