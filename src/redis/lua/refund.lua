
-- Refunds by request id (semantics.md, "Refunds"; docs/redis.md,
-- "Refunds"). The client computes a refund with the core (the receipts it
-- rebuilds from the id's record, the states it reads), then writes it with
-- one compare-and-set that also marks the id refunded: the mark is what
-- makes a refund happen once across a fleet.
--
-- FCALL L_refund_read numkeys keys...  [tns]   (read-only)
--   The values at the keys, in order (nil for none): the id's record and
--   its refund mark, then the states of its checks' leaves; with tns (the
--   store's clock, common.lua), then the instant of TIME in ticks of tns
--   ns, two integers h l.
--
-- FCALL L_refund numkeys id-key mark-key state-keys...  record, then per
-- state key: expected ('-' for none, '=' .. value) new ('' for no write,
-- '-' to delete) px ('0' for no expiry); then [channel message]
--   Only if the id's record is still `record`, not yet marked, and every
--   state key still holds its expected value: writes the new values and
--   the mark (expiring with the record), publishes `message` on `channel`
--   when given, {1}. {6} when already marked;
--   {0} when anything else moved (nothing written: the client reads again).
redis.register_function{
  function_name = '@LIB@_refund_read',
  callback = function(KEYS, ARGV)
    local out = {}
    for i = 1, #KEYS do out[i] = get(KEYS[i]) or false end
    if ARGV[1] then
      local sh, sl = store_time(tonumber(ARGV[1]))
      out[#KEYS + 1], out[#KEYS + 2] = sh, sl
    end
    return out
  end,
  flags = {'no-writes'},
}

redis.register_function('@LIB@_refund', function(KEYS, ARGV)
  if get(KEYS[2]) then return {6} end
  if get(KEYS[1]) ~= ARGV[1] then return {0} end
  if not cas_keys(KEYS, ARGV, 3, 2) then return {0} end
  local ttl = redis.call('PTTL', KEYS[1])
  if ttl > 0 then
    redis.call('SET', KEYS[2], '1', 'PX', string.format('%d', ttl))
  else
    redis.call('SET', KEYS[2], '1')
  end
  return {1}
end)
