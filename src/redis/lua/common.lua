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
