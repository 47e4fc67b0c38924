-- unfence.lua: an erasure of a member ends (see Store.UnfenceIndex).
-- KEYS: 1 the erasure fence of the member's board index (shard.IndexFence).
-- The fence counts the erasures of the member that run; the last one to
-- end deletes it. Atomic, so an erasure that starts meanwhile keeps its own
-- count. Returns the erasures still running.
local n = redis.call('INCRBY', KEYS[1], -1)
if n <= 0 then
  redis.call('DEL', KEYS[1])
  return 0
end
return n
