-- take_index.lua: an erasure takes a member's board index (Store.TakeIndex).
-- KEYS: 1 the member board index, 2 the erasures' work set beside it
-- (shard.IndexWork) — the member's tag.
-- The index's elements move to the work set and the index goes: writes
-- from now on add to a fresh index, which this erasure leaves alone.
-- Returns the work set's elements: those moved, and those an earlier
-- erasure took and has not erased yet (one cut short, or one still running).
local idx, work = KEYS[1], KEYS[2]
local moved = redis.call('SMEMBERS', idx)
for i = 1, #moved, 1000 do
  redis.call('SADD', work, unpack(moved, i, math.min(i + 999, #moved)))
end
if #moved > 0 then
  redis.call('DEL', idx)
end
return redis.call('SMEMBERS', work)
