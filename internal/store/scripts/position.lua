-- position.lua: for each probe (score, member), count this shard's members
-- strictly ahead of it in board order, those with score ≥ more_min (strictly
-- more points) and those with score ≥ same_min (at least as many points).
-- Summed over shards these give position, competition rank and percentile.
-- O(probes · log N).
-- KEYS: 1 z.
-- ARGV: 1 n, then n quadruples: score, member, more_min, same_min.
-- Returns {card, ahead1, more1, atleast1, ahead2, ...}.
local z = KEYS[1]
local n = tonumber(ARGV[1])
local out = {redis.call('ZCARD', z)}
for i = 0, n - 1 do
  local b = 2 + 4 * i
  local s, m, mm, sm = ARGV[b], ARGV[b + 1], ARGV[b + 2], ARGV[b + 3]
  out[#out + 1] = ahead_of(z, s, m)
  out[#out + 1] = redis.call('ZCOUNT', z, mm, '+inf')
  out[#out + 1] = redis.call('ZCOUNT', z, sm, '+inf')
end
return out
