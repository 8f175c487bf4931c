-- GCRA and the token bucket (one state for both: semantics.md, "GCRA").
-- The client reduces L and W by g = gcd(L, W) (L' = L/g, W' = W/g) and sends
--   mode L' cq cr sq sr    with c*W' = cq*L' + cr and S*W' = sq*L' + sr.
-- State "g<tag> dq dr lh ll": the debt u' - last*L' = dq*L' + dr (0 <= dr < L',
-- at most S*W') at last = lh*2^32 + ll, the latest admit. Fresh: no key.
-- Exact for floor(S*W/L) < 2^52 ticks and L' <= 2^52, any int64 instant.
local function gcra_leaf(v, arg, tag, th, tl)
  local mode, L = arg(), arg()
  local cq, cr, sq, sr = arg(), arg(), arg(), arg()
  local eh, el, dq, dr = th, tl, 0, 0
  if v then
    local f, n = fields(v, tag)
    if n ~= 4 then corrupt('gcra fields') end
    local pdq, pdr, lh, ll = f[1], f[2], f[3], f[4]
    check_limbs(lh, ll)
    if pdq < 0 or pdr < 0 or pdr >= L or pdq > sq or (pdq == sq and pdr > sr) then corrupt('gcra debt') end
    if before(eh, el, lh, ll) then eh, el = lh, ll end -- time never runs backwards
    local e = elapsed(eh, el, lh, ll)
    if e <= pdq then dq, dr = pdq - e, pdr end
  end
  if mode ~= 1 then return false end
  local aq, ar = dq + cq, dr + cr -- the debt after admitting
  if ar >= L then aq, ar = aq + 1, ar - L end
  if aq < sq or (aq == sq and ar <= sr) then
    return true, fmt('%s %d %d %d %d', tag, aq, ar, eh, el), aq + 1
  end
  return false
end
