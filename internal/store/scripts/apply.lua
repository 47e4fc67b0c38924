-- apply.lua: one point event on one board shard.
-- KEYS: 1 z (zset), 2 ev (dedupe hash), 3 meta (state hash), 4 (optional)
--       md (user → metadata hash) — one hash tag.
-- ARGV: 1 event id, 2 member, 3 mode (sum | gt | lt, in stored space),
--       4 stored delta or value, 5 B (0: tie member), 6 achievement seq,
--       7 max |stored points|, 8 now (unix ms), 9 rules version,
--       10 '1' when the period is known frozen (a board shard that has no
--       meta yet must refuse too), 11 (with KEYS[4]) the event's metadata
--       JSON, '' when it carries none: an applied change keeps it (or clears
--       the member's), a change that does not count leaves it.
-- Returns {status, score before or '', score after or ''} with status
-- ok | same (max/min: not an improvement) | dup | closed | range.
local z, ev, meta = KEYS[1], KEYS[2], KEYS[3]
local id, member, mode = ARGV[1], ARGV[2], ARGV[3]
local v, B, seq, maxp = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7])

local cur = redis.call('ZSCORE', z, member)
if redis.call('HEXISTS', ev, id) == 1 then return replay(ev, id, 'dup', cur) end
local st = closed_state(meta)
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
touch_meta(meta, ARGV[8], ARGV[9])
if newP == nil then
  -- Recorded so that a replay is a duplicate; nothing to reverse.
  redis.call('HSET', ev, id, '0|' .. fmt(curSeq or -1) .. '|' .. fmt(curSeq or -1))
  return {'same', cur, cur}
end

local score = fmt(encode(newP, B, seq))
redis.call('ZADD', z, score, member)
set_metadata(KEYS[4], member, ARGV[11])
-- record: applied delta | seq before (-1: member was absent) | seq after
-- [| e<removal epoch> once a moderator removed the member (remove.lua)]
local before = -1
if P ~= nil then before = curSeq end
redis.call('HSET', ev, id, fmt(newP - (P or 0)) .. '|' .. fmt(before) .. '|' .. fmt(seq) .. removal_tag(ev, member))
-- '#n:<member>' counts the member's live (applied, not reversed) changes on
-- this shard when there are two or more; a present member without it has
-- exactly one (most members of a big board pay nothing). A field starting
-- with '#' is never an event id.
if P ~= nil then
  if redis.call('HEXISTS', ev, '#n:' .. member) == 1 then
    redis.call('HINCRBY', ev, '#n:' .. member, 1)
  else
    redis.call('HSET', ev, '#n:' .. member, 2)
  end
end
return {'ok', cur or '', score}
