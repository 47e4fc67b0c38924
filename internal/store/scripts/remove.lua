-- remove.lua: a moderator removes a member from one board shard (Redis-only
-- mode; ledger mode projects the ledger's absent total with project.lua).
-- KEYS: 1 z, 2 ev (dedupe hash), 3 meta, 4 cols (user → stored-member
--       prefix, families with sort columns), 5 md (user → metadata) — one
--       hash tag; then (optional) the change feed.
-- ARGV: 1 member, 2 '1' when the period is known frozen.
-- Returns {status, score before or '', ''} with status ok | absent | closed.
-- The member leaves the sorted set (as its stored member: the columns prefix
-- from cols, then the user id), its prefix, metadata and live-change count
-- go; its removal epoch '#rm:<member>' moves on by one, so that apply.lua and
-- columns.lua tag the member's later records with it and a reversal of an
-- event from before the removal leaves the board alone (the member started
-- afresh). Projection versions (m) stay: an older projection stays stale.
local z, ev, meta, colsk, md = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local member = ARGV[1]

local stored = member
local prefix = redis.call('HGET', colsk, member)
if prefix then stored = prefix .. member end
local cur = redis.call('ZSCORE', z, stored)
local st = closed_state(meta)
if not st and ARGV[2] == '1' then st = 'frozen' end
if st then return {'closed', st, cur or ''} end
if not cur then return {'absent', '', ''} end
redis.call('ZREM', z, stored)
redis.call('HDEL', colsk, member)
redis.call('HDEL', md, member)
redis.call('HDEL', ev, '#n:' .. member)
redis.call('HINCRBY', ev, '#rm:' .. member, 1)
feed(stored, '')
return {'ok', cur, ''}
