-- members.lua: find users on one board shard of a family with sort columns:
-- the cols hash gives each user's stored-member prefix, the sorted set its
-- score. O(users · log N).
-- KEYS: 1 z, 2 cols (user → prefix) — one hash tag.
-- ARGV: the users.
-- Returns {stored1, score1, stored2, score2, ...}, '' and '' for an absent user.
local z, cols = KEYS[1], KEYS[2]
local out = {}
local ps = redis.call('HMGET', cols, unpack(ARGV))
for i = 1, #ARGV do
  local stored, score = '', ''
  if ps[i] then
    local s = redis.call('ZSCORE', z, ps[i] .. ARGV[i])
    if s then stored, score = ps[i] .. ARGV[i], s end
  end
  out[#out + 1] = stored
  out[#out + 1] = score
end
return out
