-- join.lua: one member joins a tournament period, atomically against its
-- size bound.
-- KEYS: 1 the joins hash of the national board's shard 0 (every seat),
--       2 that shard's meta (state) — one hash tag.
-- ARGV: 1 member, 2 max size (0: none), 3 now (unix ms).
-- Returns {status, size}: joined (a new seat) | in (already in) | full |
-- closed (the board is frozen or archived).
local jn, meta = KEYS[1], KEYS[2]
local member, max = ARGV[1], tonumber(ARGV[2])
local n = redis.call('HLEN', jn)
local st = redis.call('HGET', meta, 'state')
if st and st ~= 'open' then return {'closed', n} end
if redis.call('HEXISTS', jn, member) == 1 then return {'in', n} end
if max > 0 and n >= max then return {'full', n} end
redis.call('HSET', jn, member, ARGV[3])
return {'joined', n + 1}
