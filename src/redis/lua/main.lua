-- The entry points. The library is named sluice_v2_<8 hex digits of its
-- code's SHA-1> (embed_lua.cmake), written L below, and its functions
-- L_one, L_decide, L_peek and L_cas (L_report below; L_release in
-- release.lua, L_refund* in refund.lua). Every request's numbers travel in
-- ARGV[1], a binary string of little-endian doubles (common.lua).
--
-- FCALL L_one 1 state-key  blob
--   One stateful leaf, no request id (a plain policy, one check: the hot
--   path). blob: th tl tns base batch, then the leaf: its 9-byte tag and
--   its arguments. Reply: {0, before} (denied), {1, before, after}
--   (admitted, `after` written), {3, before} (the key holds a value of
--   another configuration or a foreign value: nothing decided, nothing
--   written), {4} (skipped, see below).
--   With a second key, the check's override key (docs/redis.md,
--   "Overrides"), and ARGV[2] what the client built the leaf for ('-': no
--   override, '=' .. the override's bytes): when the key holds anything
--   else, {6, 1, stored} (stored: nil when none), before the state is read;
--   nothing written.
--
-- FCALL L_decide (or L_peek, read-only) numkeys [id-key]
-- state-keys...  blob [identity]
--   identity (with an id only): the request's identity (the C++
--   detail::request_identity: its ordered checks' policy names, keys and
--   costs), stored at the head of the id's record; a repeat whose identity
--   differs answers {5} (an id conflict), reading and writing nothing else.
--   blob: th tl tns base batch has_id id_ttl_ms, then the request as a tree in
--   prefix form: 'A' n (all_of: every child admits, then every child
--   consumes), 'O' n (any_of: the first child that admits consumes), with n
--   a double; 'Y' / 'N' (always allow / deny, no key); or a leaf: its tag
--   and its arguments, taking the next state key; or 'V' len, then len
--   bytes (len -1: none): the next key is a check's override key, which
--   must hold those bytes (none: be absent) before the subtree after it is
--   decided, else the call answers {6, v, stored} (v: which 'V' of the
--   request, from 1; stored: nil when none) and writes nothing, not even a
--   request id's record. The root is 'A' over the
--   request's checks. Reply: {admitted, then per leaf the value before (nil
--   when fresh) and the value written (nil when not written)}; {2, record}
--   when the request id was decided before (the record without its
--   identity); {5} when it was decided before for another request; {3, then
--   per leaf its value} when a leaf's key holds another configuration's
--   value (nothing written).
--
-- FCALL L_report numkeys state-keys...  blob
--   A report (semantics.md, "Reports"): as L_decide without a request id
--   (has_id 0), every leaf sent in mode 2. Every check is charged, never
--   denied: each leaf answers whether it fits (as a decision) and the value
--   it would write anyway; 'A' charges every child, 'O' the first child
--   that fits, else its first child. Reply: {1, then per leaf the value
--   before and the value written}, or {3, ...} as L_decide.
--
-- FCALL L_cas numkeys [id-key] state-keys...  has_id id_ttl_ms record
-- identity, then per state key: expected ('-' for none, '=' .. value) new
-- ('' for no write, '-' to delete) px ('0' for no expiry) [channel message]
--   Writes the new values (and the request id's record) only if every key
--   still holds its expected value, and publishes `message` on `channel`
--   when given: {1}; else {0}, nothing written; {2,
--   record} for a repeated request id, {5} for a used id whose request had
--   another identity. The client decides a request whose
--   states it had to carry over from an earlier configuration (status 3)
--   itself, with the core, and writes the result with this call.
--
-- The instant: th tl as sent, or the store's clock when th is sent with
-- 2^32 added (common.lua, `instant`); then every reply above ends with the
-- instant used, two integers h l (a request id's record holds it too).
--
-- `batch` keeps a pipeline in order: a call that answers 3 remembers its
-- batch number (non-zero, drawn at random per pipeline), and every later
-- call of that batch answers {4} without reading or writing anything, so
-- the client decides the request that answered 3 and sends the rest again,
-- in order. 0: a call on its own.
--
-- Nothing is written unless the request admits (a denial is a pure read;
-- only a request id's record is written for it). TTLs: a written state
-- expires floor(ticks_to_fresh * tns / 10^6) + base ms after the write
-- (base = grace + 2 ms); with tns 0 (ticks of unknown length) after base ms
-- (0: never); a quota never.
local leaves = {
  [103] = gcra_leaf, [113] = leaky_leaf, [102] = fixed_leaf, [99] = counter_leaf,
  [117] = quota_leaf, [115] = log_leaf, [98] = buckets_leaf, [108] = concurrency_leaf,
}
-- Bytes of each leaf's arguments after its tag.
local arg_bytes = {[103] = 64, [113] = 80, [102] = 56, [99] = 56, [117] = 24, [115] = 32, [98] = 64, [108] = 56}

local halted = 0 -- the batch whose pipeline stopped at a status 3

local function get(key)
  local v = redis.pcall('GET', key)
  if type(v) == 'table' then corrupt('not a string key') end
  return v
end

local function put(key, value, ttl, tns, base)
  local px = base
  if ttl < 0 then
    px = 0
  elseif tns > 0 then
    px = ttl * tns / 1000000
    px = px - px % 1 + base
    if px > 1125899906842624 then px = 1125899906842624 end
  end
  if px > 0 then
    redis.call('SET', key, value, 'PX', string.format('%d', px))
  else
    redis.call('SET', key, value)
  end
end

local function one(KEYS, ARGV)
  local b = ARGV[1]
  local th, tl, tns, base, batch, tag, pos = struct.unpack('<dddddc9', b)
  th, tl = instant(th, tl, tns)
  if batch ~= 0 and batch == halted then return {4} end
  if KEYS[2] then
    local o, want = get(KEYS[2]), ARGV[2]
    if (o and want ~= '=' .. o) or (not o and want ~= '-') then
      halted = batch
      return {6, 1, o or false}
    end
  end
  local v = get(KEYS[1])
  if v and string.sub(v, 1, 9) ~= tag then
    halted = batch
    return {3, v}
  end
  local leaf = leaves[string.byte(tag)]
  if not leaf then error({err = 'sluice: bad request'}) end
  local ok, after, ttl = leaf(v, b, pos, tag, th, tl)
  if not ok then return {0, v} end
  put(KEYS[1], after, ttl, tns, base)
  return {1, v, after}
end

redis.register_function('@LIB@_one', function(KEYS, ARGV) return stamped(one(KEYS, ARGV)) end)

-- A request id's record: its identity as an item, then 'th tl admitted',
-- then per leaf '|', its tag and two items, the value before and the value
-- written: '-' for none, else the value's length, ':' and its bytes. A
-- check decided under an override has '|V' and the override's bytes as an
-- item before its first leaf.
local function item(x)
  if x then return #x .. ':' .. x end
  return '-'
end

-- The id's record at `key` for a request of `identity`: nil when none, the
-- record after its identity when the identities are equal, false when the
-- id was first used for another request.
local function recorded(key, identity)
  local rec = get(key)
  if not rec then return nil end
  local head = item(identity)
  if string.sub(rec, 1, #head) ~= head then return false end
  return string.sub(rec, #head + 1)
end

local function run(KEYS, ARGV, peek, report)
  local b = ARGV[1]
  local th, tl, tns, base, batch, has_id, id_ttl, pos = struct.unpack('<ddddddd', b)
  th, tl = instant(th, tl, tns)
  if batch ~= 0 and batch == halted then return {4} end
  local ki = 1
  if has_id == 1 then
    local rec = recorded(KEYS[1], ARGV[2])
    if rec == false then return {5} end
    if rec then return {2, rec} end
    ki = 2
  end
  local found, nf, stale = {}, 0, false -- per leaf: {key, before, after, ttl}
  local nv, moved = 0, nil -- the 'V's read; the first that failed: {6, v, stored}
  local marks = {} -- per leaf index: the override bytes its check was decided under
  local function node()
    local t = string.byte(b, pos)
    if t == 86 then -- 'V': the next check's override key and the bytes expected there
      local len
      len, pos = struct.unpack('<d', b, pos + 1)
      local key = KEYS[ki]
      ki = ki + 1
      nv = nv + 1
      local o = get(key) or false -- false: absent
      local want = false
      if len >= 0 then
        want = string.sub(b, pos, pos + len - 1)
        pos = pos + len
      end
      if o ~= want and not moved then moved = {6, nv, o} end
      if want then marks[nf + 1] = want end
      return node()
    end
    if t == 65 or t == 79 then -- 'A', 'O'
      local n
      n, pos = struct.unpack('<d', b, pos + 1)
      local ok, commit = t == 65, {}
      local first = nil -- a report's: the first child's charges
      for _ = 1, n do
        local cok, cc = node()
        if t == 65 then
          if cok or report then for _, x in ipairs(cc) do commit[#commit + 1] = x end end
          if not cok then ok = false end
        elseif cok and not ok then
          ok, commit = true, cc
        end
        if first == nil then first = cc end
      end
      if report then
        if t == 79 and not ok then commit = first end
        return ok, commit
      end
      if not ok then commit = {} end
      return ok, commit
    elseif t == 89 then -- 'Y'
      pos = pos + 1
      return true, {}
    elseif t == 78 then -- 'N'
      pos = pos + 1
      return false, {}
    end
    local leaf = leaves[t]
    if not leaf then error({err = 'sluice: bad request'}) end
    local tag = string.sub(b, pos, pos + 8)
    local key = KEYS[ki]
    ki = ki + 1
    local v = get(key)
    local rec = {key, v, false, 0, tag}
    nf = nf + 1
    found[nf] = rec
    if v and string.sub(v, 1, 9) ~= tag then
      stale = true
      pos = pos + 9 + arg_bytes[t]
      return false, {}
    end
    local ok, after, ttl, nxt = leaf(v, b, pos + 9, tag, th, tl)
    pos = nxt
    rec[3], rec[4] = after or false, ttl
    if ok or (report and after) then return ok, {rec} end
    return false, {}
  end
  local ok, commit = node()
  if moved then
    halted = batch
    return moved
  end
  if stale then
    halted = batch
    local out = {3}
    for i = 1, nf do out[i + 1] = found[i][2] end
    return out
  end
  if report then ok = true end -- never denied
  local written = {}
  if ok then for _, r in ipairs(commit) do written[r] = true end end
  local out = {ok and 1 or 0}
  for i = 1, nf do
    local r = found[i]
    if not written[r] then r[3] = false end -- only the committed leaves are written
    out[2 * i] = r[2]
    out[2 * i + 1] = r[3]
  end
  if ok and not peek then
    for _, r in ipairs(commit) do if r[3] then put(r[1], r[3], r[4], tns, base) end end
  end
  if has_id == 1 and not peek then
    local rec = {item(ARGV[2]), string.format('%d %d %d', th, tl, ok and 1 or 0)}
    for i = 1, nf do
      local f = found[i]
      if marks[i] then rec[#rec + 1] = '|V' .. item(marks[i]) end
      rec[#rec + 1] = '|' .. f[5] .. item(f[2]) .. item(f[3])
    end
    redis.call('SET', KEYS[1], table.concat(rec), 'PX', string.format('%d', id_ttl))
  end
  return out
end

redis.register_function('@LIB@_decide', function(KEYS, ARGV) return stamped(run(KEYS, ARGV, false, false)) end)
redis.register_function('@LIB@_report', function(KEYS, ARGV) return stamped(run(KEYS, ARGV, false, true)) end)
redis.register_function{
  function_name = '@LIB@_peek',
  callback = function(KEYS, ARGV) return stamped(run(KEYS, ARGV, true, false)) end,
  flags = {'no-writes'},
}

-- Nothing: a round trip to the node of KEYS[1] after a call that published
-- (redis.md, "The deny cache"). Redis runs it only after writing out every
-- reply and message of that call.
redis.register_function{
  function_name = '@LIB@_sync',
  callback = function(KEYS, ARGV) return 1 end,
  flags = {'no-writes'},
}

redis.register_function('@LIB@_cas', function(KEYS, ARGV)
  local ki = 1
  if ARGV[1] == '1' then
    local rec = recorded(KEYS[1], ARGV[4])
    if rec == false then return {5} end
    if rec then return {2, rec} end
    ki = 2
  end
  local ai = 5
  for k = ki, #KEYS do
    local v, want = get(KEYS[k]), ARGV[ai]
    if v then
      if string.sub(want, 1, 1) ~= '=' or string.sub(want, 2) ~= v then return {0} end
    elseif want ~= '-' then
      return {0}
    end
    ai = ai + 3
  end
  ai = 5
  for k = ki, #KEYS do
    local new, px = ARGV[ai + 1], ARGV[ai + 2]
    if new == '-' then
      redis.call('DEL', KEYS[k])
    elseif new ~= '' then
      if px ~= '0' then redis.call('SET', KEYS[k], new, 'PX', px) else redis.call('SET', KEYS[k], new) end
    end
    ai = ai + 3
  end
  if ARGV[ai] then redis.call('PUBLISH', ARGV[ai], ARGV[ai + 1]) end  -- the deny caches' invalidation (redis.md)
  if ARGV[1] == '1' then redis.call('SET', KEYS[1], item(ARGV[4]) .. ARGV[3], 'PX', ARGV[2]) end
  return {1}
end)
