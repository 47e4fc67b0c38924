-- gate_tail.lua: the tournament checks around the write body (see
-- gate_head.lua). A replay (the event id is in the dedupe hash, KEYS[2] of
-- apply and columns) is answered by the body as a duplicate and is never an
-- attempt. Otherwise: a member who has not joined is refused (notjoined)
-- when joins are required, one with max attempts accepted events already
-- is refused (exhausted); both refusals write nothing. An event the body
-- accepts (ok, or same: a max/min value that did not improve) counts one
-- attempt, in the same script, so concurrent events of one member never
-- count more than max attempts.
if G_JN and redis.call('HEXISTS', KEYS[2], G_ID) == 0 then
  if G_REQ and redis.call('HEXISTS', G_JN, G_MEMBER) == 0 then
    return {'notjoined', '', ''}
  end
  if G_MAX > 0 and tonumber(redis.call('HGET', G_AT, G_MEMBER) or '0') >= G_MAX then
    return {'exhausted', '', ''}
  end
end
local r = body()
if G_JN and G_MAX > 0 and (r[1] == 'ok' or r[1] == 'same') then
  redis.call('HINCRBY', G_AT, G_MEMBER, 1)
end
return r
