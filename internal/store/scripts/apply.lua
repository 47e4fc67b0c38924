-- apply.lua: one point event on one board shard.
-- KEYS: 1 z (zset), 2 ev (dedupe hash), 3 meta (state hash), 4 (optional)
--       md (user → metadata hash), then (optional) the change feed — one
--       hash tag (common.lua: FEED).
-- ARGV: 1 event id, 2 member, 3 mode (sum | gt | lt, in stored space),
--       4 stored delta or value, 5 B (0: tie member), 6 achievement seq,
--       7 max |stored points|, 8 now (unix ms), 9 rules version,
--       10 '1' when the period is known frozen (a board shard that has no
--       meta yet must refuse too), 11 (with KEYS[4]) the event's metadata
--       JSON, '' when it carries none: an applied change keeps it (or clears
--       the member's), a change that does not count leaves it.
-- Returns {status, score before or '', score after or ''} with status
-- ok | same (max/min: not an improvement) | dup | closed | range.
-- The hot path costs one HMGET of the ev hash (the dedupe record, the
-- member's removal epoch and live-change count at once), one HGET of the
-- state, the ZADD and one HSET of the record with the count.
local z, ev, meta = KEYS[1], KEYS[2], KEYS[3]
local md = nil
if NKEYS >= 4 then md = KEYS[4] end
local id, member, mode = ARGV[1], ARGV[2], ARGV[3]
local v, B, seq, maxp = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7])

local cur = redis.call('ZSCORE', z, member)
-- rec: this event's record (a replay), rm: the member's removal epoch,
-- live: its live-change count (see below).
local f = redis.call('HMGET', ev, id, '#rm:' .. member, '#n:' .. member)
if f[1] then
  -- A replay: its record written back unchanged (see replay in common.lua).
  redis.call('HSET', ev, id, f[1])
  return {'dup', cur or '', cur or ''}
end
local stv = redis.call('HGET', meta, 'state')
local st = nil
if stv and stv ~= 'open' then st = stv end
if not st and ARGV[10] == '1' then st = 'frozen' end
if st then return {'closed', st, cur or ''} end

local P, curSeq = decode(cur, B)
local newP
if mode == 'sum' then
  newP = (P or 0) + v
elseif mode == 'gt' then
  if P == nil or v > P then newP = v end
elseif mode == 'lt' then
  if P == nil or v < P then newP = v end
else
  return redis.error_reply('ERR rankgate apply: bad mode')
end

-- Refusals come before any write: a refused event leaves no trace.
if newP ~= nil then
  if newP > maxp or newP < -maxp then return {'range', cur or '', cur or ''} end
  if B > 0 and (seq < 0 or seq >= B) then return {'range', cur or '', cur or ''} end
end
if not stv then
  -- touch_meta (common.lua), without asking for the state a second time.
  redis.call('HSET', meta, 'state', 'open', 'created', ARGV[8], 'rules', ARGV[9])
end
if newP == nil then
  -- Recorded so that a replay is a duplicate; nothing to reverse.
  redis.call('HSET', ev, id, '0|' .. fmt(curSeq or -1) .. '|' .. fmt(curSeq or -1))
  return {'same', cur, cur}
end

local score = fmt(encode(newP, B, seq))
redis.call('ZADD', z, score, member)
set_metadata(md, member, ARGV[11])
-- record: applied delta | seq before (-1: member was absent) | seq after
-- [| e<removal epoch> once a moderator removed the member (remove.lua)]
local before = -1
if P ~= nil then before = curSeq end
local rec = fmt(newP - (P or 0)) .. '|' .. fmt(before) .. '|' .. fmt(seq)
if f[2] then rec = rec .. '|e' .. f[2] end
-- '#n:<member>' counts the member's live (applied, not reversed) changes on
-- this shard when there are two or more; a present member without it has
-- exactly one (most members of a big board pay nothing). A field starting
-- with '#' is never an event id.
if P ~= nil then
  redis.call('HSET', ev, id, rec, '#n:' .. member, tonumber(f[3] or '1') + 1)
else
  redis.call('HSET', ev, id, rec)
end
feed(member, score)
return {'ok', cur or '', score}
