-- lease.lua: one holder at a time, with a fencing token.
-- KEYS[1] owner (STRING "<owner> <token>", with a TTL), KEYS[2] fence (counter).
-- ARGV[1] op: acquire | renew | release; ARGV[2] owner id; ARGV[3] token
-- (renew, release); ARGV[4] ttl in ms (acquire, renew).
-- acquire: the holder's token when ARGV[2] holds it (TTL renewed) or took it
-- now (a new token: INCRBY fence 1; the ACL grants incrby, not incr); 0 when someone else holds it.
-- renew: 1 and a fresh TTL when "<owner> <token>" still holds it, else 0.
-- release: 1 when it held it (deleted), else 0.
local op, me = ARGV[1], ARGV[2]
local cur = redis.call('GET', KEYS[1])
if op == 'acquire' then
  local ttl = tonumber(ARGV[4])
  if cur then
    local who, tok = string.match(cur, '^(%S+) (%d+)$')
    if who == me then
      redis.call('PEXPIRE', KEYS[1], ttl)
      return tonumber(tok)
    end
    return 0
  end
  local tok = redis.call('INCRBY', KEYS[2], 1)
  redis.call('SET', KEYS[1], me .. ' ' .. tok, 'PX', ttl)
  return tok
elseif op == 'renew' then
  if cur == me .. ' ' .. ARGV[3] then
    redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[4]))
    return 1
  end
  return 0
elseif op == 'release' then
  if cur == me .. ' ' .. ARGV[3] then
    redis.call('DEL', KEYS[1])
    return 1
  end
  return 0
end
return redis.error_reply('lease.lua: unknown op ' .. tostring(op))
