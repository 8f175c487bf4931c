-- GCRA and the token bucket (one state for both: semantics.md, "GCRA").
-- Sends  mode L cq cr sq sr  with c*W = cq*L + cr and S*W = sq*L + sr
-- (mode 0: the cost can never be admitted).
-- State "g<tag>" dq dr lh ll: the debt u - last*L = dq*L + dr (0 <= dr < L,
-- dq < 2^52) in 1/L tick, at last = lh*2^32 + ll, the latest admit. An
-- admit leaves at most S*W; a state carried over a reconfiguration may hold
-- more (reconfigure.hpp: a debt the new rate pays off first). Fresh: no key.
-- Exact for floor(S*W/L) < 2^52 ticks and L <= 2^52, any int64 instant. The
-- hot path: written inline.
local function gcra_leaf(v, b, pos, tag, th, tl)
  local mode, L, cq, cr, sq, sr, nxt = struct.unpack('<dddddd', b, pos)
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
  if mode ~= 1 then return false, nil, 0, nxt end
  local aq, ar = dq + cq, dr + cr -- the debt after admitting
  if ar >= L then aq, ar = aq + 1, ar - L end
  if aq < sq or (aq == sq and ar <= sr) then
    return true, struct.pack('<c9dddd', tag, aq, ar, eh, el), aq + 1, nxt
  end
  return false, nil, 0, nxt
end
