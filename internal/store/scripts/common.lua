-- common.lua: helpers prepended to every script body (after its #!lua line).
-- Scores travel as decimal strings: a Lua number handed back to Redis is
-- truncated to an integer, and every score here is an integer within ±2^53.

local function fmt(x)
  return string.format('%.17g', x)
end

-- The change feed (families with a read index, DESIGN §4b): a caller that
-- keeps one passes the shard's feed stream as the last of KEYS and ends
-- ARGV with '~feed', maxlen. NKEYS is the number of the script's own keys.
-- ('~' starts no event id, member, version or JSON object, so an ARGV of a
-- write without a feed never ends that way.)
local FEED, FEED_LEN, NKEYS = nil, nil, #KEYS
if #ARGV >= 2 and ARGV[#ARGV - 1] == '~feed' then
  FEED, FEED_LEN, NKEYS = KEYS[#KEYS], ARGV[#ARGV], #KEYS - 1
end

-- feed: append (member, new score) to the change feed, score '' when the
-- member left the sorted set; atomically with the change, in its slot.
local function feed(member, score)
  if FEED then
    redis.call('XADD', FEED, 'MAXLEN', '~', FEED_LEN, '*', 'm', member, 's', score)
  end
end

-- feed_reset: the shard's sorted set was replaced whole (a rebuild swap, a
-- derive): every follower reloads the shard from this entry on.
local function feed_reset(why)
  if FEED then
    redis.call('XADD', FEED, 'MAXLEN', '~', FEED_LEN, '*', 'r', why)
  end
end

-- bytes_lt: a < b in memcmp order, the order Redis uses for equal scores.
-- Lua's own '<' on strings uses strcoll, which depends on the server locale.
local function bytes_lt(a, b)
  local la, lb = #a, #b
  local n = la
  if lb < n then n = lb end
  for i = 1, n do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then return x < y end
  end
  return la < lb
end

-- decode: stored score → stored points and achievement seq (nil when absent).
local function decode(cur, B)
  if not cur then return nil, nil end
  local s = tonumber(cur)
  if B == 0 then return s, 0 end
  local q = math.floor(s / B)
  local r = s - q * B
  if r < 0 then q = q - 1; r = r + B elseif r >= B then q = q + 1; r = r - B end
  return q, B - 1 - r
end

local function encode(p, B, seq)
  if B == 0 then return p end
  return p * B + (B - 1 - seq)
end

-- ahead_of: members of z strictly ahead of (s, m) in ZREVRANGE order, and
-- whether m itself is in z with score s. An equal-score group is the index
-- range [better, better + t), ordered by member bytes descending, so a binary
-- search finds m's place in O(log t · log N) — never a scan of the group.
local function ahead_of(z, s, m)
  local ms = redis.call('ZSCORE', z, m)
  if ms and tonumber(ms) == tonumber(s) then
    return redis.call('ZREVRANK', z, m), true
  end
  local better = redis.call('ZCOUNT', z, '(' .. s, '+inf')
  local t = redis.call('ZCOUNT', z, s, s)
  local lo, hi = better, better + t
  while lo < hi do
    local mid = math.floor((lo + hi) / 2)
    local e = redis.call('ZREVRANGE', z, mid, mid)[1]
    if bytes_lt(m, e) then lo = mid + 1 else hi = mid end
  end
  return lo, false
end

-- ahead_between: members strictly ahead of probe p, when every index < lo
-- is ahead of it and every index ≥ hi is not: a binary search over [lo, hi].
local function ahead_between(z, lo, hi, p)
  while lo < hi do
    local mid = math.floor((lo + hi) / 2)
    local e = redis.call('ZREVRANGE', z, mid, mid)[1]
    if bytes_lt(p, e) then lo = mid + 1 else hi = mid end
  end
  return lo
end

-- ahead_down and ahead_up count the members strictly ahead of probe p in
-- [lo, hi] (every index < lo ahead of it, every index ≥ hi not) by galloping
-- from the end the answer is expected near — hi for ahead_down, lo for
-- ahead_up — then a binary search in the last step: O(log d · log N) where
-- d is the distance to the answer. Sort columns use them from a member's own
-- place: the members equal to it on points and every column are few even
-- when its points group is huge.
local function ahead_down(z, lo, hi, p)
  local step = 1
  while hi - step >= lo do
    local i = hi - step
    local e = redis.call('ZREVRANGE', z, i, i)[1]
    if bytes_lt(p, e) then
      lo = i + 1
      break
    end
    hi = i
    step = step * 2
  end
  return ahead_between(z, lo, hi, p)
end

local function ahead_up(z, lo, hi, p)
  local step = 1
  while lo + step - 1 < hi do
    local i = lo + step - 1
    local e = redis.call('ZREVRANGE', z, i, i)[1]
    if bytes_lt(p, e) then
      lo = i + 1
      step = step * 2
    else
      hi = i
      break
    end
  end
  return ahead_between(z, lo, hi, p)
end

-- open_or_state: nil when the board shard takes writes, else its state.
local function closed_state(meta)
  local st = redis.call('HGET', meta, 'state')
  if st and st ~= 'open' then return st end
  return nil
end

local function touch_meta(meta, now, rules)
  if redis.call('HSETNX', meta, 'state', 'open') == 1 then
    redis.call('HSET', meta, 'created', now, 'rules', rules)
  end
end

-- replay: answer a replay (dup) after writing its record back unchanged. The
-- write is replicated like any other, so a WAIT after this script (on this
-- connection) covers the original write too, even when the original ran on
-- another connection that never waited for it (redis.wait_replicas).
local function replay(ev, id, status, cur)
  redis.call('HSET', ev, id, redis.call('HGET', ev, id))
  return {status, cur or '', cur or ''}
end

-- set_metadata keeps an applied change's metadata for the member ('' clears
-- it). md is nil for a caller that does not pass the key: nothing happens.
local function set_metadata(md, member, json)
  if not md then return end
  if json and json ~= '' then
    redis.call('HSET', md, member, json)
  else
    redis.call('HDEL', md, member)
  end
end

-- Removal epochs (remove.lua counts a member's removals in the ev hash as
-- '#rm:<member>'). An event record written after a removal ends in
-- '|e<epoch>'; a reversal of a record older than the latest removal changes
-- nothing (the member started afresh).

-- removal_tag: the tail to append to a new event record ('' before any removal).
local function removal_tag(ev, member)
  local epoch = redis.call('HGET', ev, '#rm:' .. member)
  if epoch then return '|e' .. epoch end
  return ''
end

-- record_epoch: the removal epoch a record's tail names (0 for no tail), or
-- nil when the tail is not a removal tag (a record this script cannot reverse).
local function record_epoch(tail)
  if tail == '' then return 0 end
  return tonumber(string.match(tail, '^|e(%d+)$') or '')
end

-- removed_since: whether the member was removed after a record of epoch e.
local function removed_since(ev, member, e)
  return tonumber(redis.call('HGET', ev, '#rm:' .. member) or '0') > e
end

-- Reversals (reverse.lua, columns.lua op reverse): the record of the
-- original event oid is marked 'R|' once it is reversed; the reversal rid
-- has a record of its own.

-- read_original reads the original's record and matches it with pattern
-- (its first capture the delta, its last the tail). It answers the reply
-- the reversal gives at once (unknown, reversed, notreversible) or nil, then
-- the record, its removal epoch and the pattern's captures.
local function read_original(ev, oid, cur, pattern)
  local rec = redis.call('HGET', ev, oid)
  if not rec then return {'unknown', cur or '', cur or ''} end
  if string.sub(rec, 1, 2) == 'R|' then return replay(ev, oid, 'reversed', cur) end
  local caps = {string.match(rec, pattern)}
  local epoch = caps[1] and record_epoch(caps[#caps])
  if not epoch then return {'notreversible', cur or '', cur or ''} end
  return nil, rec, epoch, caps
end

-- void_reversal records a reversal of an original older than the member's
-- latest removal: the member started afresh, so it changes nothing.
local function void_reversal(meta, now, rules, ev, oid, rec, rid, cur)
  touch_meta(meta, now, rules)
  redis.call('HSET', ev, oid, 'R|' .. rec)
  redis.call('HSET', ev, rid, '0|-1|-1|r:' .. oid)
  return {'ok', cur or '', cur or ''}
end

-- live_changes: the member's live changes, the counter when there are two
-- or more, else one for a present member (see apply.lua).
local function live_changes(ev, member, cur)
  local live = tonumber(redis.call('HGET', ev, '#n:' .. member) or '')
  if not live then
    if cur then live = 1 else live = 0 end
  end
  return live
end

-- record_reversal records an applied reversal: the original reversed, one
-- live change less, and the reversal's record (it took d off; the member's
-- seq went from curSeq to newSeq).
local function record_reversal(meta, now, rules, ev, member, oid, rec, rid, live, d, curSeq, newSeq)
  touch_meta(meta, now, rules)
  redis.call('HSET', ev, oid, 'R|' .. rec)
  if live - 1 <= 1 then
    redis.call('HDEL', ev, '#n:' .. member)
  else
    redis.call('HINCRBY', ev, '#n:' .. member, -1)
  end
  redis.call('HSET', ev, rid, fmt(-d) .. '|' .. fmt(curSeq or -1) .. '|' .. fmt(newSeq) .. '|r:' .. oid)
end
