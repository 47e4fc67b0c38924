-- swap.lua: put a rebuilt board shard in place, atomically, inside its slot.
-- The fresh copies were filled beside the live keys; RENAME replaces the
-- live ones (the old values are freed by Redis, lazily with lazyfree on), so
-- a late re-projection of an older total meets the rebuilt versions. A fresh
-- copy that was never filled (no members, no column prefixes, no metadata)
-- unlinks its live key.
-- KEYS: pairs (fresh, live): 1-2 z, 3-4 m, 5-6 cols, 7-8 md, then
--       (optional) the change feed — one hash tag. With a feed, a reset
--       entry tells every follower to reload the shard.
-- Returns the number of members now on the shard.
for i = 1, NKEYS, 2 do
  if redis.call('EXISTS', KEYS[i]) == 1 then
    redis.call('RENAME', KEYS[i], KEYS[i + 1])
  else
    redis.call('UNLINK', KEYS[i + 1])
  end
end
feed_reset('swap')
return redis.call('ZCARD', KEYS[2])
