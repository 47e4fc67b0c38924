-- join.lua: members join a tournament period, atomically against its size
-- bound, in arrival order (a storm of concurrent joins arrives as a few
-- calls of many members each).
-- KEYS: 1 the joins hash of the national board's shard 0 (every seat),
--       2 that shard's meta (state) — one hash tag.
-- ARGV: 1 max size (0: none), 2 now (unix ms), 3.. members.
-- Returns {status, size, status, size, ...}, one pair per member: joined
-- (a new seat) | in (already in) | full | closed (the board is frozen or
-- archived); size is the seats taken after that member's turn.
local jn, meta = KEYS[1], KEYS[2]
local max, now = tonumber(ARGV[1]), ARGV[2]
local n = redis.call('HLEN', jn)
local st = redis.call('HGET', meta, 'state')
local closed = st and st ~= 'open'
local out = {}
for i = 3, #ARGV do
  local member = ARGV[i]
  local r
  if closed then
    r = 'closed'
  elseif redis.call('HEXISTS', jn, member) == 1 then
    r = 'in'
  elseif max > 0 and n >= max then
    r = 'full'
  else
    redis.call('HSET', jn, member, now)
    n = n + 1
    r = 'joined'
  end
  out[#out + 1] = r
  out[#out + 1] = n
end
return out
