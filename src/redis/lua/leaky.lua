-- The leaky bucket as a queue. The client sends every configuration- and
-- cost-dependent quantity as a mixed number modulo L:
--   mode L wq wr xq xr yq yr kq kr  with W = wq*L + wr,
-- X = (Q - c)*W = xq*L + xr, Y = (c - 1)*W = yq*L + yr and the most backlog
-- a report may leave K = kq*L + kr. Mode 2, a report: R = max(now*L, R + W)
-- + Y whatever it fits, D saturating at K (Y sent as at most K + 1, X as
-- far below any D when c > Q).
-- State "q<tag>" dq dr lh ll: D = R - last*L = dq*L + dr (0 <= dr < L), R the
-- release time of the last admitted unit scaled by L, at the latest admit
-- last. Admit iff D(now) < X (units waiting + c <= Q); then
-- R = max(now*L, R + W) + Y. Exact for floor(Q*W/L) < 2^52, L <= 2^52.
--! leaf q leaky_leaf 80
local function leaky_leaf(v, b, pos, tag, th, tl)
  local mode, L, wq, wr, xq, xr, yq, yr, kq, kr, nxt = struct.unpack('<dddddddddd', b, pos)
  local function norm(q, r) -- the remainder back into [0, L)
    if r >= L then return q + 1, r - L elseif r < 0 then return q - 1, r + L end
    return q, r
  end
  local eh, el, dq, dr, fresh = th, tl, 0, 0, true
  if v then
    if #v ~= 41 then corrupt('leaky length') end
    local pdq, pdr, lh, ll = struct.unpack('<dddd', v, 10)
    if not (int_in(pdq, 0, P52 - 1) and int_in(pdr, 0, L - 1) and limbs_ok(lh, ll)) then corrupt('leaky release') end
    if before(eh, el, lh, ll) then eh, el = lh, ll end
    dq, dr = pdq - elapsed(eh, el, lh, ll), pdr -- very negative when long idle: fresh
    local sq, sr = norm(dq + wq, dr + wr)
    fresh = sq < 0 or (sq == 0 and sr == 0) -- D + W <= 0: a new unit leaves on arrival
  end
  if fresh then dq, dr = -wq - 1, 0 end -- below -W: stays exact
  local fits = dq < xq or (dq == xq and dr < xr)
  if mode ~= 2 and (mode ~= 1 or not fits) then return false, nil, 0, nxt end
  local sq, sr = norm(dq + wq, dr + wr) -- start = max(now*L, R + W)
  if sq < 0 then sq, sr = 0, 0 end
  local nq, nr = norm(sq + yq, sr + yr)
  if mode == 2 then
    if nq > kq or (nq == kq and nr > kr) then nq, nr = kq, kr end
    return fits, struct.pack('<c9dddd', tag, nq, nr, eh, el), nq + wq + 2, nxt
  end
  return true, struct.pack('<c9dddd', tag, nq, nr, eh, el), nq + wq + 2, nxt
end
