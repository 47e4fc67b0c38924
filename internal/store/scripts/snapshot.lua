-- snapshot.lua: freeze the top `depth` entries of one board shard into a
-- short-lived copy, in-slot (ZRANGESTORE), with a marker that outlives
-- neither. O(log N + depth).
-- KEYS: 1 z (source), 2 snapshot zset, 3 marker — one hash tag.
-- ARGV: 1 depth, 2 ttl in milliseconds.
-- Returns the number of entries copied.
local n = redis.call('ZRANGESTORE', KEYS[2], KEYS[1], 0, tonumber(ARGV[1]) - 1, 'REV')
if n > 0 then redis.call('PEXPIRE', KEYS[2], ARGV[2]) end
redis.call('SET', KEYS[3], n, 'PX', ARGV[2])
return n
