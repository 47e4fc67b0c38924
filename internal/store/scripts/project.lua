-- project.lua: set members' absolute totals from an upstream ledger, each
-- applied only when its version is newer than the stored one. One call
-- carries every projection of a write batch on one board shard (in their
-- order), so a ledger group pays one script call per shard, not one per
-- event and board (issue 10).
-- KEYS: 1 z, 2 m (member → version hash), 3 meta, 4 (optional) md (member →
--       metadata), then (optional) the change feed — one hash tag.
-- ARGV: 1 n, then n blocks of 11: member, version, stored points, B, seq,
--       max |stored points|, now (unix ms), rules version, seq mode: 'keep'
--       (API projections: the seq changes only when the points do) or 'set'
--       (ledger mode: the ledger's achievement seq is the truth), present:
--       '0' removes the member (a ledger reversal of its only change, or a
--       removal; at the stored version too), and (used with KEYS[4]) the
--       projection's metadata JSON ('' clears it).
-- A Lua error in one block (a malformed argument: a bug, the Go side builds
-- them) ends the call with the blocks before it applied; every write of the
-- call is then answered with the error and retried, and their versions make
-- the retry of the applied ones stale, not a second count.
-- Returns n replies, one per block: {status, version (stored or applied),
-- score before or '', score after or ''} with status ok | stale | closed | range.
local z, m, meta = KEYS[1], KEYS[2], KEYS[3]
local md = nil
if NKEYS >= 4 then md = KEYS[4] end
local st = closed_state(meta)
local touched = false

local function project(member, version, p, B, seq, maxp, now, rules, seqMode, present, json)
  local cur = redis.call('ZSCORE', z, member)
  if st then return {'closed', st, cur or '', cur or ''} end
  local stored = redis.call('HGET', m, member)
  local cv = tonumber(stored or '0')
  -- An absent total at the stored version is a removal in a family of
  -- projections (the ledger keeps the upstream's version): it still applies.
  if version < cv or (version == cv and present ~= '0') then
    -- A replay (a retried event of the ledger, a re-projection): write the
    -- stored version back unchanged, as replay in common.lua does, so that a
    -- WAIT after this script (redis.wait_replicas) covers the projection that
    -- stored it, which may have run on another connection that never waited.
    if stored then redis.call('HSET', m, member, stored) end
    return {'stale', fmt(cv), cur or '', cur or ''}
  end
  if p > maxp or p < -maxp then return {'range', fmt(cv), cur or '', cur or ''} end

  local P, curSeq = decode(cur, B)
  if present == '0' then
    if not touched then touch_meta(meta, now, rules); touched = true end
    redis.call('ZREM', z, member)
    if md then redis.call('HDEL', md, member) end
    redis.call('HSET', m, member, fmt(version))
    if cur then feed(member, '') end
    return {'ok', fmt(version), cur or '', ''}
  end
  local useSeq = seq
  if seqMode ~= 'set' and P ~= nil and P == p then useSeq = curSeq end
  if B > 0 and (useSeq < 0 or useSeq >= B) then return {'range', fmt(cv), cur or '', cur or ''} end
  local score = fmt(encode(p, B, useSeq))
  if not touched then touch_meta(meta, now, rules); touched = true end
  redis.call('ZADD', z, score, member)
  set_metadata(md, member, json)
  redis.call('HSET', m, member, fmt(version))
  feed(member, score)
  return {'ok', fmt(version), cur or '', score}
end

local out = {}
for i = 0, tonumber(ARGV[1]) - 1 do
  local a = 1 + i * 11
  out[i + 1] = project(ARGV[a + 1], tonumber(ARGV[a + 2]), tonumber(ARGV[a + 3]), tonumber(ARGV[a + 4]),
    tonumber(ARGV[a + 5]), tonumber(ARGV[a + 6]), ARGV[a + 7], ARGV[a + 8], ARGV[a + 9], ARGV[a + 10], ARGV[a + 11])
end
return out
