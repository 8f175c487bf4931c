-- The entry points. FCALL sluice_v1_decide (or sluice_v1_peek, read-only)
-- numkeys [id-key] state-keys... ARGV:
--   now nh nl has_id id_ttl_ms grace_ms ms_per_tick long_ttl_ms  tree...
-- `tree` is the request in prefix form: 'A' n children (all_of: every child
-- admits, then every child consumes), 'O' n children (any_of: the first child
-- that admits consumes), 'Y' / 'N' (always allow / deny, no key), or a leaf:
-- its tag (algorithm letter + configuration tag) followed by its arguments;
-- each leaf takes the next state key. The root is 'A' over the request's
-- checks. Nothing is written unless the root admits (a denial is a pure read).
--
-- Reply: {admitted (0/1), then per leaf: the value before (nil when fresh)
-- and the value written (nil when not written)}; or {2, record} when the
-- request id was decided before (record: "now|admitted|before|after|...").
-- TTLs: a written state expires ceil(ticks_to_fresh * ms_per_tick) + grace_ms
-- + 1 ms after the write; with ms_per_tick 0 (ticks of unknown length) after
-- long_ttl_ms (0: never); a quota never.
local leaves = {
  g = gcra_leaf, q = leaky_leaf, f = fixed_leaf, c = counter_leaf,
  u = quota_leaf, s = log_leaf, b = buckets_leaf,
}

local function get(key)
  local v = redis.pcall('GET', key)
  if type(v) == 'table' and v.err then corrupt('not a string key') end
  return v
end

local function run(KEYS, ARGV, peek)
  local ai = 9
  local function tok() local x = ARGV[ai]; ai = ai + 1; return x end
  local function arg() local x = tonumber(ARGV[ai]); ai = ai + 1; return x end
  local th, tl = tonumber(ARGV[2]), tonumber(ARGV[3])
  local has_id = ARGV[4] == '1'
  local ki = 1
  if has_id then
    local rec = get(KEYS[1])
    if rec then return {2, rec} end
    ki = 2
  end
  local found = {} -- per leaf: {key, before, after, ttl}
  local function node()
    local t = tok()
    if t == 'A' or t == 'O' then
      local n, ok, commit = tonumber(tok()), t == 'A', {}
      for _ = 1, n do
        local cok, cc = node()
        if t == 'A' then
          if cok then for _, x in ipairs(cc) do commit[#commit + 1] = x end else ok = false end
        elseif cok and not ok then
          ok, commit = true, cc
        end
      end
      if not ok then commit = {} end
      return ok, commit
    elseif t == 'Y' then
      return true, {}
    elseif t == 'N' then
      return false, {}
    end
    local leaf = leaves[string.sub(t or '', 1, 1)]
    if not leaf then error({err = 'sluice: bad request'}) end
    local key = KEYS[ki]
    ki = ki + 1
    local v = get(key)
    local ok, after, ttl = leaf(v, arg, t, th, tl)
    local rec = {key, v or false, after or false, ttl}
    found[#found + 1] = rec
    if ok then return true, {rec} end
    return false, {}
  end
  local ok, commit = node()
  local out = {ok and 1 or 0}
  local written = {}
  if ok then for _, r in ipairs(commit) do written[r] = true end end
  for _, r in ipairs(found) do
    if not written[r] then r[3] = false end -- only the committed leaves are written
  end
  if ok and not peek then
    local grace, mpt, long = tonumber(ARGV[6]), tonumber(ARGV[7]), tonumber(ARGV[8])
    for _, r in ipairs(commit) do
      local px = 0
      if r[4] >= 0 then
        if mpt > 0 then
          px = math.ceil(r[4] * mpt) + grace + 1
          if px > 1125899906842624 then px = 1125899906842624 end
        else
          px = long
        end
      end
      if px > 0 then redis.call('SET', r[1], r[3], 'PX', fmt('%d', px)) else redis.call('SET', r[1], r[3]) end
    end
  end
  for _, r in ipairs(found) do
    out[#out + 1] = r[2]
    out[#out + 1] = r[3]
  end
  if has_id and not peek then
    local rec = {ARGV[1], ok and '1' or '0'}
    for _, r in ipairs(found) do
      rec[#rec + 1] = r[2] or ''
      rec[#rec + 1] = r[3] or ''
    end
    redis.call('SET', KEYS[1], table.concat(rec, '|'), 'PX', ARGV[5])
  end
  return out
end

redis.register_function('sluice_v1_decide', function(KEYS, ARGV) return run(KEYS, ARGV, false) end)
redis.register_function{
  function_name = 'sluice_v1_peek',
  callback = function(KEYS, ARGV) return run(KEYS, ARGV, true) end,
  flags = {'no-writes'},
}
