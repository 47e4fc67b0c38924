-- gate.lua: a tournament's checks for an event in ledger mode, run before
-- the ledger commits it (in Redis-only mode gate_head/gate_tail run them
-- inside the write's own script).
-- KEYS: 1 joins hash, 2 attempts hash of the member's board shard (one tag).
-- ARGV: 1 op ('take' | 'give'), 2 event id, 3 member, 4 join required
--       ('1' | '0'), 5 max attempts (0: none).
-- take: 'held' when the event holds an attempt already (a retry: never a
--       second attempt); 'notjoined' when joins are required and the member
--       has none; 'exhausted' when max attempts are used; else 'ok', and with
--       max attempts the event takes one: the member's count goes up and the
--       field '~<event id>' marks the event as holding it.
-- give: an event the ledger refused gives its attempt back ('given'), once;
--       'none' when it held none.
local jn, at = KEYS[1], KEYS[2]
local op, id, member = ARGV[1], ARGV[2], ARGV[3]
local held = '~' .. id
if op == 'give' then
  if redis.call('HDEL', at, held) == 1 then
    if tonumber(redis.call('HINCRBY', at, member, -1)) <= 0 then
      redis.call('HDEL', at, member)
    end
    return 'given'
  end
  return 'none'
elseif op ~= 'take' then
  return redis.error_reply('ERR rankgate gate: bad op')
end
if redis.call('HEXISTS', at, held) == 1 then return 'held' end
if ARGV[4] == '1' and redis.call('HEXISTS', jn, member) == 0 then return 'notjoined' end
local max = tonumber(ARGV[5])
if max > 0 then
  if tonumber(redis.call('HGET', at, member) or '0') >= max then return 'exhausted' end
  redis.call('HINCRBY', at, member, 1)
  redis.call('HSET', at, held, 1)
end
return 'ok'
