-- erase.lua: erase a member from one board shard (DELETE /v1/members/{member}),
-- whatever the period's state (open, frozen, settled, archived).
-- KEYS: 1 z, 2 ev (dedupe hash), 3 m (member → projection version),
--       4 cols (user → stored-member prefix), 5 md (user → metadata),
--       6 jn (tournament joins), 7 at (tournament attempts) — one hash tag;
--       then (optional) the change feed.
-- ARGV: 1 member.
-- Returns {removed: 1 | 0, score before or ''}.
-- The member leaves the sorted set (as its stored member: the columns prefix
-- from cols, then the user id) and every per-member field of the shard goes:
-- its prefix, metadata, projection version, live-change count, join and
-- attempts. Only that member's entries change: every other member keeps its
-- score, and the shard's count drops by one. When the member was on the
-- shard, its removal epoch '#rm:<member>' moves on by one (as remove.lua
-- does) where the shard keeps event records (Redis-only mode): a reversal of
-- an erased event changes nothing, and later events count as new. A second
-- call finds nothing and changes nothing.
local z, ev, m, colsk, md, jn, at = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7]
local member = ARGV[1]

local stored = member
local prefix = redis.call('HGET', colsk, member)
if prefix then stored = prefix .. member end
local cur = redis.call('ZSCORE', z, stored)
if cur then
  redis.call('ZREM', z, stored)
  feed(stored, '')
  if redis.call('EXISTS', ev) == 1 then
    redis.call('HINCRBY', ev, '#rm:' .. member, 1)
  end
end
redis.call('HDEL', colsk, member)
redis.call('HDEL', md, member)
redis.call('HDEL', m, member)
redis.call('HDEL', ev, '#n:' .. member)
redis.call('HDEL', jn, member)
redis.call('HDEL', at, member)
if cur then return {1, cur} end
return {0, ''}
