-- rate.lua: count a member's event under a player token in a sliding window,
-- so that max_events_per_minute holds across every gateway.
-- KEYS[1] the member's window in one family (ZSET event id → ms), under the
-- member's own tag.
-- ARGV[1] limit (events per window), ARGV[2] window in ms, ARGV[3] event id.
-- Returns 0 when the event counts (or was counted already: a retry of one
-- event is one event), else the ms until the oldest counted event leaves the
-- window. The clock is the node's (TIME), so gateways with different clocks
-- share one window. O(limit): limits are small (config bounds them).
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local limit, window = tonumber(ARGV[1]), tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
if redis.call('ZSCORE', KEYS[1], ARGV[3]) then
  return 0
end
if redis.call('ZCARD', KEYS[1]) >= limit then
  local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
  return math.max(1, tonumber(oldest[2]) + window - now)
end
redis.call('ZADD', KEYS[1], now, ARGV[3])
redis.call('PEXPIRE', KEYS[1], window)
return 0
