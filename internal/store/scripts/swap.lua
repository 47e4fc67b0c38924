-- swap.lua: put a rebuilt board shard in place, atomically, inside its slot.
-- The fresh copies were filled beside the live keys; RENAME replaces the
-- live ones (the old values are freed by Redis, lazily with lazyfree on), so
-- a late re-projection of an older total meets the rebuilt versions.
-- KEYS: 1 fresh z, 2 z, 3 fresh m, 4 m — one hash tag.
-- Returns the number of members now on the shard.
if redis.call('EXISTS', KEYS[1]) == 1 then
  redis.call('RENAME', KEYS[1], KEYS[2])
else
  redis.call('UNLINK', KEYS[2])
end
if redis.call('EXISTS', KEYS[3]) == 1 then
  redis.call('RENAME', KEYS[3], KEYS[4])
else
  redis.call('UNLINK', KEYS[4])
end
return redis.call('ZCARD', KEYS[2])
