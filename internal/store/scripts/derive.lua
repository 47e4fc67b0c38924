-- derive.lua: compute one derived board shard in its slot and tell the
-- followers of its change feed (families with a read index; without one
-- the gateway sends a plain ZUNIONSTORE).
-- KEYS: 1 dst, 2.. the input shards' sorted sets, then the change feed of
--       dst — one hash tag (the key group).
-- ARGV: 1 aggregate (sum | min | max), then one integer weight per input,
--       then '~feed', maxlen (common.lua).
-- Returns the members of dst.
local args = {'ZUNIONSTORE', KEYS[1], NKEYS - 1}
for i = 2, NKEYS do args[#args + 1] = KEYS[i] end
args[#args + 1] = 'WEIGHTS'
for i = 2, NKEYS do args[#args + 1] = ARGV[i] end
args[#args + 1] = 'AGGREGATE'
args[#args + 1] = ARGV[1]
local n = redis.call(unpack(args))
feed_reset('derive')
return n
