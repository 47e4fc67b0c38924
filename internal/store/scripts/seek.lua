-- seek.lua: the one ordered-read primitive. From a place in board order
-- (ZREVRANGE order), return the next entries of one shard. O(log N + limit).
-- KEYS: 1 z; 2 (optional) a guard key: when given and absent, the read fails
--       with SNAPSHOT_EXPIRED (snapshot pages check their marker this way).
-- ARGV: 1 mode: top | after (just after (score, member)) | le (first score ≤ score)
--              | before (the `limit` entries just before (score, member))
--              | around (the `limit` entries just before and the `limit` just after
--                (score, member), the member itself left out: one place found once),
--       2 score, 3 member, 4 limit,
--       5 more_min: '' or a score; when set, also count members with score ≥ it,
--       6 stop_min: '' or a score; entries below it end the page,
--       7 more_member: '' or a member; when set (families with sort
--         columns), "more" counts the members strictly ahead of
--         (more_min, more_member) instead (rank.BetterKey).
-- Returns {start index, more count or -1, member1, score1, member2, score2, ...};
-- around returns {start of the entries before, more, how many entries come before, ...}.
local z = KEYS[1]
if KEYS[2] and redis.call('EXISTS', KEYS[2]) == 0 then
  return redis.error_reply('SNAPSHOT_EXPIRED snapshot expired or unknown')
end
local mode, s, m, limit = ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4])
local more = -1
if ARGV[5] ~= '' then
  if ARGV[7] and ARGV[7] ~= '' then
    more = ahead_of(z, ARGV[5], ARGV[7])
  else
    more = redis.call('ZCOUNT', z, ARGV[5], '+inf')
  end
end

local start
if mode == 'top' then
  start = 0
elseif mode == 'le' then
  start = redis.call('ZCOUNT', z, '(' .. s, '+inf')
elseif mode == 'after' then
  local a, present = ahead_of(z, s, m)
  start = a
  if present then start = a + 1 end
elseif mode == 'before' then
  local a = ahead_of(z, s, m)
  start = a - limit
  if start < 0 then start = 0 end
  limit = a - start
elseif mode == 'around' then
  local a, present = ahead_of(z, s, m)
  local up = a - limit
  if up < 0 then up = 0 end
  local out = {up, more, a - up}
  local function add(r)
    for i = 1, #r do out[#out + 1] = r[i] end
  end
  if a > up then add(redis.call('ZREVRANGE', z, up, a - 1, 'WITHSCORES')) end
  local down = a
  if present then down = a + 1 end
  if limit > 0 then add(redis.call('ZREVRANGE', z, down, down + limit - 1, 'WITHSCORES')) end
  return out
else
  return redis.error_reply('ERR rankgate seek: bad mode')
end

local out = {start, more}
if limit <= 0 then return out end
local r = redis.call('ZREVRANGE', z, start, start + limit - 1, 'WITHSCORES')
if ARGV[6] ~= '' then
  local floor = tonumber(ARGV[6])
  for i = 1, #r, 2 do
    if tonumber(r[i + 1]) < floor then break end
    out[#out + 1] = r[i]
    out[#out + 1] = r[i + 1]
  end
else
  for i = 1, #r do out[#out + 1] = r[i] end
end
return out
