-- position.lua: for each probe (score, member), count this shard's members
-- strictly ahead of it in board order, those with score ≥ more_min (strictly
-- more points) and those with score ≥ same_min (at least as many points).
-- Summed over shards these give position, competition rank and percentile.
-- On a family with sort columns the probe also names more_member and
-- same_member, and "more" and "at least" count the members strictly ahead of
-- (score, more_member) and (score, same_member) — strictly better, and at
-- least as good, on (points, columns) — by the same binary search as ahead_of.
-- O(probes · log N).
-- KEYS: 1 z.
-- ARGV: 1 n, then n sextuples: score, member, more_min, same_min,
--       more_member ('' without columns), same_member.
-- Returns {card, ahead1, more1, atleast1, ahead2, ...}.
local z = KEYS[1]
local n = tonumber(ARGV[1])
local out = {redis.call('ZCARD', z)}
for i = 0, n - 1 do
  local b = 2 + 6 * i
  local s, m, mm, sm, mmb, smb = ARGV[b], ARGV[b + 1], ARGV[b + 2], ARGV[b + 3], ARGV[b + 4], ARGV[b + 5]
  local a, present = ahead_of(z, s, m)
  out[#out + 1] = a
  if mmb and mmb ~= '' then
    -- Sort columns: the members better on (points, columns) end at or before
    -- m's place, those at least as good at or after it; gallop from there.
    local better = redis.call('ZCOUNT', z, '(' .. s, '+inf')
    local t = redis.call('ZCOUNT', z, s, s)
    local from = a
    if present then from = a + 1 end
    out[#out + 1] = ahead_down(z, better, a, mmb)
    out[#out + 1] = ahead_up(z, from, better + t, smb)
  else
    out[#out + 1] = redis.call('ZCOUNT', z, mm, '+inf')
    out[#out + 1] = redis.call('ZCOUNT', z, sm, '+inf')
  end
end
return out
