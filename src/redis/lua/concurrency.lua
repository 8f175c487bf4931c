-- Concurrency (semantics.md, "The algorithms": Concurrency, and "Leases").
-- Sends  mode N c dh dl nh nl  with the lease length D = dh*2^32 + dl and
-- the nonce nh*2^32 + nl (drawn by the client: the script stays
-- deterministic); mode 0: the cost is never admitted (c < 1 or c > N,
-- sent as 0); mode 2: a report, which charges a concurrency part nothing
-- (only whether the cost fits is answered).
-- State "l<tag>" lh ll, then per lease xh xl nh nl u: latest = lh*2^32 + ll,
-- the latest admit; each lease's expiry x, nonce and units, by expiry (ties
-- in issue order). A lease is held at t iff x > t. Exact for N < 2^53 (the
-- units' sum), any int64 instant. Fresh: no key.
local P31 = 2147483648

-- The state of value v: latest as limbs and the leases (5 fields each),
-- checked as the client checks it (values.cpp).
local function lease_state(v)
  local k = (#v - 9 - 16) / 40
  if k < 0 or k % 1 ~= 0 then corrupt('concurrency length') end
  local f = {}
  read_doubles(v, 10, 2 + 5 * k, f)
  if not limbs_ok(f[1], f[2]) then corrupt('concurrency latest') end
  local sum = 0
  for i = 3, 2 + 5 * k, 5 do
    if not (limbs_ok(f[i], f[i + 1]) and limbs_ok(f[i + 2] - P31, f[i + 3]) and int_in(f[i + 4], 1, P53 - 1)) then
      corrupt('concurrency lease')
    end
    if before(f[i], f[i + 1], f[1], f[2]) then corrupt('concurrency expiry') end
    if i > 3 and before(f[i], f[i + 1], f[i - 5], f[i - 4]) then corrupt('concurrency order') end
    sum = sum + f[i + 4]
    if sum >= P53 then corrupt('concurrency units') end
  end
  return f, k
end

--! leaf l concurrency_leaf 56
local function concurrency_leaf(v, b, pos, tag, th, tl)
  local mode, N, c, dh, dl, nh, nl, nxt = struct.unpack('<ddddddd', b, pos)
  local f, k = {th, tl}, 0
  local eh, el = th, tl
  if v then
    f, k = lease_state(v)
    if before(eh, el, f[1], f[2]) then eh, el = f[1], f[2] end -- time never runs backwards
  end
  local held = 0
  for i = 3, 2 + 5 * k, 5 do
    if before(eh, el, f[i], f[i + 1]) then held = held + f[i + 4] end
  end
  local fits = mode ~= 0 and c >= 1 and held + c <= N
  if mode ~= 1 or not fits then return fits, nil, 0, nxt end
  -- The new lease's expiry: e + D, saturating at 2^63 - 1.
  local xh, xl = eh + dh, el + dl
  if xl >= P32 then xh, xl = xh + 1, xl - P32 end
  if xh >= P31 then xh, xl = P31 - 1, P32 - 1 end
  local out, m, placed = {eh, el}, 2, false
  for i = 3, 2 + 5 * k, 5 do
    if before(eh, el, f[i], f[i + 1]) then -- held at e: kept
      if not placed and before(xh, xl, f[i], f[i + 1]) then
        out[m + 1], out[m + 2], out[m + 3], out[m + 4], out[m + 5] = xh, xl, nh, nl, c
        m, placed = m + 5, true
      end
      for j = 0, 4 do out[m + 1 + j] = f[i + j] end
      m = m + 5
    end
  end
  if not placed then
    out[m + 1], out[m + 2], out[m + 3], out[m + 4], out[m + 5] = xh, xl, nh, nl, c
    m = m + 5
  end
  -- Fresh once the latest expiry has passed.
  return true, write_doubles(tag, out, m), elapsed(out[m - 4], out[m - 3], eh, el) + 1, nxt
end
