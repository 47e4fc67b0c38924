-- unban.lua: lift a member's ban in one step.
-- KEYS[1] the bans (HASH member → ban JSON), KEYS[2] their version (counter).
-- ARGV[1] member.
-- Returns the lifted ban's JSON, or false when the member was not banned (the
-- version then stays: no gateway needs to reload).
local v = redis.call('HGET', KEYS[1], ARGV[1])
if not v then
  return false
end
redis.call('HDEL', KEYS[1], ARGV[1])
redis.call('INCRBY', KEYS[2], 1)
return v
