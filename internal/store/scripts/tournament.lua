-- tournament.lua: the tournament registry (one hash tag, {tournaments}).
-- KEYS: 1 defs (HASH id → JSON), 2 active (ZSET id → unix ms it stops
--       counting; +inf), 3 version (counter).
-- ARGV: 1 op (create | cancel), 2 id, 3 the tournament's JSON,
--       create: 4 active until (unix ms or '+inf'), 5 now (unix ms),
--       6 max active.
-- create → {'created', version} | {'exists', 0} | {'limit', active count};
-- cancel → {'cancelled', version} | {'unknown', 0}.
local defs, active, ver = KEYS[1], KEYS[2], KEYS[3]
local op, id = ARGV[1], ARGV[2]
if op == 'create' then
  if redis.call('HEXISTS', defs, id) == 1 then return {'exists', 0} end
  redis.call('ZREMRANGEBYSCORE', active, '-inf', ARGV[5])
  local n = redis.call('ZCARD', active)
  if n >= tonumber(ARGV[6]) then return {'limit', n} end
  redis.call('HSET', defs, id, ARGV[3])
  redis.call('ZADD', active, ARGV[4], id)
  return {'created', redis.call('INCRBY', ver, 1)}
elseif op == 'cancel' then
  if redis.call('HEXISTS', defs, id) == 0 then return {'unknown', 0} end
  redis.call('HSET', defs, id, ARGV[3])
  redis.call('ZREM', active, id)
  return {'cancelled', redis.call('INCRBY', ver, 1)}
end
return redis.error_reply('ERR rankgate tournament: bad op')
