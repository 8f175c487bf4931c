-- sluice FUNCTION library, part 1: exact integers in Lua doubles.
--
-- Every number the library computes with is an integer of magnitude below
-- 2^53, so +, - and comparisons are exact. The C++ client (int128) does every
-- multiplication and division that depends only on the configuration and the
-- cost, and splits 64-bit instants into two 32-bit limbs (h*2^32 + l). Numbers
-- are formatted with string.format('%d'), never tostring (which keeps 14
-- digits). A stored value that does not parse back to the exact text this
-- library writes is refused with the error 'sluice: corrupt state'.
local P32 = 4294967296
local P53 = 9007199254740992
local function fmt(...) return string.format(...) end

local function corrupt(why)
  error({err = 'sluice: corrupt state (' .. why .. ')'})
end

-- The integers of a stored value after its type letter and configuration tag,
-- checked to be canonical (the exact text `fmt('%d')` writes back), each of
-- magnitude below 2^53. `v` must start with `tag .. ' '`.
local function fields(v, tag)
  if type(v) ~= 'string' then corrupt('not a string') end
  if string.sub(v, 1, #tag + 1) ~= tag .. ' ' then corrupt('foreign value') end
  local out, n = {}, 0
  for tok in string.gmatch(string.sub(v, #tag + 2), '%S+') do
    if not string.match(tok, '^%-?%d+$') or #tok > 17 then corrupt('not an integer') end
    local x = tonumber(tok)
    if x >= P53 or x <= -P53 or fmt('%d', x) ~= tok then corrupt('out of range') end
    n = n + 1
    out[n] = x
  end
  return out, n
end

-- The instant (h, l) of a limb pair, checked: -2^31 <= h < 2^31, 0 <= l < 2^32.
local function check_limbs(h, l)
  if h < -2147483648 or h >= 2147483648 or l < 0 or l >= P32 then corrupt('time limbs') end
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
