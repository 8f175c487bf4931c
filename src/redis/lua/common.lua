-- sluice FUNCTION library, part 1: exact integers in Lua doubles.
--
-- Every number the library computes with is an integer of magnitude below
-- 2^53, so +, - and comparisons are exact. The C++ client (int128) does every
-- multiplication and division that depends only on the configuration and the
-- cost, and splits 64-bit instants into two 32-bit limbs (h*2^32 + l).
--
-- Numbers travel as IEEE doubles, little-endian, packed with Redis's
-- `struct` library: the request's numbers in one binary argument, and every
-- stored value as its 9-byte tag (type letter + 8 hex digits) followed by its
-- fields, 8 bytes each. Packing costs a fraction of text (no strtod, no
-- sprintf, one argument instead of one per number). A stored value whose
-- length, integers or ranges are not exactly ones this library writes is
-- refused with the error 'sluice: corrupt state (...)' before anything is
-- written; a value whose tag is not the leaf's is returned to the client
-- untouched (status 3, see main.lua).
local P32 = 4294967296
local P52 = 4503599627370496
local P53 = 9007199254740992

local function corrupt(why)
  error({err = 'sluice: corrupt state (' .. why .. ')'})
end

-- The store's clock (semantics.md, "Clocks of a fleet"). A call asks for
-- it by sending its instant's high limb plus 2^32 (th >= 2^31, outside
-- every instant's range): the sent instant is then the client's estimate
-- of the store's clock, and the call is decided at TIME, read here, in
-- ticks of tns ns (tns divides 1000). `shift` is TIME minus the estimate,
-- in ticks (|shift| <= 2^52, else an error: nothing decided), by which the
-- windowed leaves move the window the client split; `stamp`, the instant
-- used, which the call's reply ends with (two integers, h and l). Both are
-- set by `instant` at the start of every call that takes an instant.
local shift, stamp = 0, nil

-- TIME in ticks of tns ns, as limbs.
local function store_time(tns)
  if not (tns >= 1 and tns <= 1000 and tns % 1 == 0 and 1000 % tns == 0) then
    error({err = 'sluice: bad request (the store clock needs a tick dividing 1000 ns)'})
  end
  local t = redis.call('TIME')
  local us = tonumber(t[1]) * 1000000 + tonumber(t[2]) -- below 2^53
  local k = 1000 / tns
  local uh = math.floor(us / P32)
  local lo = (us - uh * P32) * k
  local carry = math.floor(lo / P32)
  return uh * k + carry, lo - carry * P32
end

local function instant(th, tl, tns)
  shift, stamp = 0, nil
  if th < 2147483648 then return th, tl end
  th = th - P32
  local sh, sl = store_time(tns)
  local d = (sh - th) * P32 + (sl - tl)
  if not (d >= -P52 and d <= P52) then
    error({err = 'sluice: clock offset (the estimate is more than 2^52 ticks from the store clock)'})
  end
  shift, stamp = d, {sh, sl}
  return sh, sl
end

-- `out` with the instant used appended, when the call used the store's clock.
local function stamped(out)
  if stamp then
    out[#out + 1] = stamp[1]
    out[#out + 1] = stamp[2]
  end
  return out
end

-- Whether (h, l) are the limbs of an instant: integers, -2^31 <= h < 2^31,
-- 0 <= l < 2^32 (false for NaN and infinities).
local function limbs_ok(h, l)
  return h % 1 == 0 and l % 1 == 0 and h >= -2147483648 and h < 2147483648 and l >= 0 and l < P32
end

-- Whether x is an integer with lo <= x <= hi (false for NaN).
local function int_in(x, lo, hi)
  return x % 1 == 0 and x >= lo and x <= hi
end

-- (ah, al) < (bh, bl), lexicographically (limbs).
local function before(ah, al, bh, bl)
  return ah < bh or (ah == bh and al < bl)
end

-- The window (kh, kl) and offset o of a client's split in windows of w
-- ticks (o < w < 2^53), moved by `shift`: exact (|shift| <= 2^52; math.fmod
-- is exact on integers, and a multiple of w divided by w too).
local function shifted(kh, kl, o, w)
  local d, dk = shift, 0
  if d == 0 then return kh, kl, o end
  if d > 0 then
    local a = d - (w - o)
    if a < 0 then return kh, kl, o + d end
    local r = math.fmod(a, w)
    dk, o = 1 + (a - r) / w, r
  else
    local a = o + d
    if a >= 0 then return kh, kl, a end
    local m = -a
    local r = math.fmod(m, w)
    if r == 0 then dk, o = -(m / w), 0 else dk, o = -((m - r) / w) - 1, w - r end
  end
  local s = kl + dk
  local carry = math.floor(s / P32)
  kh, kl = kh + carry, s - carry * P32
  if not limbs_ok(kh, kl) then error({err = 'sluice: bad request (a window past the last instant)'}) end
  return kh, kl, o
end

-- (ah, al) - (bh, bl), exact below 2^53 and otherwise a number above
-- 2^53 - 2^32, which exceeds every duration a state holds.
local function elapsed(ah, al, bh, bl)
  return (ah - bh) * P32 + (al - bl)
end

-- The k doubles of `s` from byte `p` on, into t[1..k] (16 per unpack);
-- returns the position after them. Requires #s >= p - 1 + 8k.
local function read_doubles(s, p, k, t)
  local fmt16 = '<dddddddddddddddd'
  local i = 0
  while i < k do
    local m = k - i
    if m >= 16 then
      local r = {struct.unpack(fmt16, s, p)}
      for j = 1, 16 do t[i + j] = r[j] end
      p, i = r[17], i + 16
    else
      t[i + 1], p = struct.unpack('<d', s, p)
      i = i + 1
    end
  end
  return p
end

-- t[1..k] packed as doubles, after `head` (16 per pack).
local function write_doubles(head, t, k)
  local fmt16 = '<dddddddddddddddd'
  local out, n, i = {head}, 1, 0
  while i < k do
    n = n + 1
    if k - i >= 16 then
      out[n] = struct.pack(fmt16, unpack(t, i + 1, i + 16))
      i = i + 16
    else
      out[n] = struct.pack('<d', t[i + 1])
      i = i + 1
    end
  end
  return table.concat(out)
end
