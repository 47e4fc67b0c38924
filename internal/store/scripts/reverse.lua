-- reverse.lua: subtract exactly what an earlier event added, once.
-- KEYS: 1 z, 2 ev, 3 meta, 4 (optional) md (member → metadata), then
--       (optional) the change feed — one hash tag.
-- ARGV: 1 reversal event id, 2 original event id, 3 member, 4 B, 5 new seq,
--       6 max |stored points|, 7 now (unix ms), 8 rules version,
--       9 '1' when the period is known frozen.
-- Returns {status, score before or '', score after or ''} with status
-- ok | dup | closed | unknown | reversed (already) | notreversible | range.
local z, ev, meta = KEYS[1], KEYS[2], KEYS[3]
local md = nil
if NKEYS >= 4 then md = KEYS[4] end
local rid, oid, member = ARGV[1], ARGV[2], ARGV[3]
local B, seq, maxp = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])

local cur = redis.call('ZSCORE', z, member)
if redis.call('HEXISTS', ev, rid) == 1 then return replay(ev, rid, 'dup', cur) end
local st = closed_state(meta)
if not st and ARGV[9] == '1' then st = 'frozen' end
if st then return {'closed', st, cur or ''} end

local rec = redis.call('HGET', ev, oid)
if not rec then return {'unknown', cur or '', cur or ''} end
if string.sub(rec, 1, 2) == 'R|' then return replay(ev, oid, 'reversed', cur) end
local d, sb, sa, tail = string.match(rec, '^(-?%d+)|(-?%d+)|(-?%d+)(.*)$')
local recEpoch = d and record_epoch(tail)
if not recEpoch then d = nil end
if not d then return {'notreversible', cur or '', cur or ''} end
d, sb, sa = tonumber(d), tonumber(sb), tonumber(sa)

-- A moderator removed the member after the original (remove.lua): what it
-- did is gone already and the member started afresh; the reversal is
-- recorded and changes nothing.
if removed_since(ev, member, recEpoch) then
  touch_meta(meta, ARGV[7], ARGV[8])
  redis.call('HSET', ev, oid, 'R|' .. rec)
  redis.call('HSET', ev, rid, '0|-1|-1|r:' .. oid)
  return {'ok', cur or '', cur or ''}
end

local P, curSeq = decode(cur, B)
local newP = (P or 0) - d
if newP > maxp or newP < -maxp then return {'range', cur or '', cur or ''} end

-- The event being undone is the member's only live change: the member leaves
-- the board, as if it never happened. It is still the latest change: restore
-- the seq from before it. Otherwise the member reaches the new total now,
-- with a new seq.
local latest = (B == 0) or (curSeq == sa)
-- Live changes: the counter when there are two or more, else one for a
-- present member (see apply.lua).
local live = tonumber(redis.call('HGET', ev, '#n:' .. member) or '')
if not live then
  if cur then live = 1 else live = 0 end
end
local gone = live <= 1
local after = ''
local newSeq = seq
if gone and newP == 0 then
  redis.call('ZREM', z, member)
  if md then redis.call('HDEL', md, member) end
  feed(member, '')
  newSeq = -1
else
  if B > 0 then
    if latest and sb >= 0 then newSeq = sb end
    if newSeq < 0 or newSeq >= B then return {'range', cur or '', cur or ''} end
  end
  after = fmt(encode(newP, B, newSeq))
  redis.call('ZADD', z, after, member)
  feed(member, after)
end
touch_meta(meta, ARGV[7], ARGV[8])
redis.call('HSET', ev, oid, 'R|' .. rec)
if live - 1 <= 1 then
  redis.call('HDEL', ev, '#n:' .. member)
else
  redis.call('HINCRBY', ev, '#n:' .. member, -1)
end
redis.call('HSET', ev, rid, fmt(-d) .. '|' .. fmt(curSeq or -1) .. '|' .. fmt(newSeq) .. '|r:' .. oid)
return {'ok', cur or '', after}
