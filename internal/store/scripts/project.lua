-- project.lua: set a member's absolute total from an upstream ledger, applied
-- only when its version is newer than the stored one.
-- KEYS: 1 z, 2 m (member → version hash), 3 meta, 4 (optional) md (member →
--       metadata) — one hash tag.
-- ARGV: 1 member, 2 version, 3 stored points, 4 B, 5 seq, 6 max |stored
--       points|, 7 now (unix ms), 8 rules version, 9 seq mode: 'keep' (API
--       projections: the seq changes only when the points do) or 'set' (ledger
--       mode: the ledger's achievement seq is the truth), 10 present: '0'
--       removes the member (a ledger reversal of its only change, or a
--       removal; at the stored version too),
--       11 (with KEYS[4]) the projection's metadata JSON ('' clears it).
-- Returns {status, version (stored or applied), score before or '', score after or ''}
-- with status ok | stale | closed | range.
local z, m, meta = KEYS[1], KEYS[2], KEYS[3]
local member = ARGV[1]
local version, p, B, seq, maxp = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])

local cur = redis.call('ZSCORE', z, member)
local st = closed_state(meta)
if st then return {'closed', st, cur or '', cur or ''} end
local stored = redis.call('HGET', m, member)
local cv = tonumber(stored or '0')
-- An absent total at the stored version is a removal in a family of
-- projections (the ledger keeps the upstream's version): it still applies.
if version < cv or (version == cv and ARGV[10] ~= '0') then
  -- A replay (a retried event of the ledger, a re-projection): write the
  -- stored version back unchanged, as replay in common.lua does, so that a
  -- WAIT after this script (redis.wait_replicas) covers the projection that
  -- stored it, which may have run on another connection that never waited.
  if stored then redis.call('HSET', m, member, stored) end
  return {'stale', fmt(cv), cur or '', cur or ''}
end
if p > maxp or p < -maxp then return {'range', fmt(cv), cur or '', cur or ''} end

local P, curSeq = decode(cur, B)
if ARGV[10] == '0' then
  touch_meta(meta, ARGV[7], ARGV[8])
  redis.call('ZREM', z, member)
  if KEYS[4] then redis.call('HDEL', KEYS[4], member) end
  redis.call('HSET', m, member, fmt(version))
  return {'ok', fmt(version), cur or '', ''}
end
local useSeq = seq
if ARGV[9] ~= 'set' and P ~= nil and P == p then useSeq = curSeq end
if B > 0 and (useSeq < 0 or useSeq >= B) then return {'range', fmt(cv), cur or '', cur or ''} end
local score = fmt(encode(p, B, useSeq))
touch_meta(meta, ARGV[7], ARGV[8])
redis.call('ZADD', z, score, member)
set_metadata(KEYS[4], member, ARGV[11])
redis.call('HSET', m, member, fmt(version))
return {'ok', fmt(version), cur or '', score}
