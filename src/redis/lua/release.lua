-- Releasing a lease (semantics.md, "Leases"; docs/redis.md, "Leases").
--
-- FCALL L_release numkeys state-keys...  blob
--   blob: th tl tns nh nl (th with 2^32 added: at the store's clock, the
--   reply then ending with the instant used, common.lua), then per key its leaf's 9-byte tag (every leaf of
--   the lease id's checks, in request order). In each concurrency leaf
--   ('l'), the lease with the nonce held at max(now, latest) is removed;
--   nothing else changes (latest stays, the key keeps its TTL). Reply:
--   {1, then per key the value before and the value written (nil when
--   unchanged)}; {3, then per key its value} when a key holds another
--   configuration's (nothing written: the client carries it over).
redis.register_function('@LIB@_release', function(KEYS, ARGV)
  local b = ARGV[1]
  local th, tl, tns, nh, nl, pos = struct.unpack('<ddddd', b)
  th, tl = instant(th, tl, tns)
  local vals, tags = {}, {}
  for i = 1, #KEYS do
    local tag
    tag, pos = struct.unpack('c9', b, pos)
    local v = get(KEYS[i])
    if v and string.sub(v, 1, 9) ~= tag then
      local out = {3}
      for j = 1, #KEYS do out[j + 1] = get(KEYS[j]) or false end
      return stamped(out)
    end
    vals[i], tags[i] = v, tag
  end
  local out = {1}
  for i = 1, #KEYS do
    local v, after = vals[i], false
    if v and string.byte(tags[i]) == 108 then -- 'l'
      local f, k = lease_state(v)
      local eh, el = th, tl
      if before(eh, el, f[1], f[2]) then eh, el = f[1], f[2] end
      for j = 3, 2 + 5 * k, 5 do
        if f[j + 2] == nh and f[j + 3] == nl and before(eh, el, f[j], f[j + 1]) then
          local rest, m = {f[1], f[2]}, 2
          for q = 3, 2 + 5 * k, 5 do
            if q ~= j then
              for r = 0, 4 do rest[m + 1 + r] = f[q + r] end
              m = m + 5
            end
          end
          after = write_doubles(tags[i], rest, m)
          redis.call('SET', KEYS[i], after, 'KEEPTTL')
          break
        end
      end
    end
    out[2 * i], out[2 * i + 1] = v or false, after
  end
  return stamped(out)
end)
