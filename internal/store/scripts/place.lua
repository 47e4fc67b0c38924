-- place.lua: places a member in the open cohort of one tier of a league
-- period, atomically: cohorts fill in arrival order, none over size, and a
-- member placed before gets their cohort again (idempotent per member).
-- KEYS: 1 the placed hash (member → n), 2 the cohorts hash (n → members,
--       "open" → the open cohort's n) — one hash tag.
-- ARGV: 1 member, 2 size.
-- Returns {fresh (1: placed now, 0: before), n}.
local placed, cohorts = KEYS[1], KEYS[2]
local member, size = ARGV[1], tonumber(ARGV[2])
local had = redis.call('HGET', placed, member)
if had then return {0, tonumber(had)} end
local open = tonumber(redis.call('HGET', cohorts, 'open') or '1')
local n = tonumber(redis.call('HGET', cohorts, tostring(open)) or '0')
if n >= size then
  open = open + 1
end
redis.call('HSET', cohorts, 'open', open)
redis.call('HINCRBY', cohorts, tostring(open), 1)
redis.call('HSET', placed, member, open)
return {1, open}
