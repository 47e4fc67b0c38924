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

local reply, rec, recEpoch, caps = read_original(ev, oid, cur, '^(-?%d+)|(-?%d+)|(-?%d+)(.*)$')
if reply then return reply end
local d, sb, sa = tonumber(caps[1]), tonumber(caps[2]), tonumber(caps[3])

-- A moderator removed the member after the original (remove.lua): what it
-- did is gone already and the member started afresh; the reversal is
-- recorded and changes nothing.
if removed_since(ev, member, recEpoch) then
  return void_reversal(meta, ARGV[7], ARGV[8], ev, oid, rec, rid, cur)
end

local P, curSeq = decode(cur, B)
local newP = (P or 0) - d
if newP > maxp or newP < -maxp then return {'range', cur or '', cur or ''} end

-- The event being undone is the member's only live change: the member leaves
-- the board, as if it never happened. It is still the latest change: restore
-- the seq from before it. Otherwise the member reaches the new total now,
-- with a new seq.
local latest = (B == 0) or (curSeq == sa)
local live = live_changes(ev, member, cur)
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
record_reversal(meta, ARGV[7], ARGV[8], ev, member, oid, rec, rid, live, d, curSeq, newSeq)
return {'ok', cur or '', after}
