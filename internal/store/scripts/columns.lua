-- columns.lua: one write on a board shard of a family with sort columns
-- (rank.Columns). The score is the stored points alone; the sorted-set member
-- is the stored member: each column in fixed-width lowercase hex (asc columns
-- as max − v, so a larger string is always better), under tie first the
-- inverted achievement seq (B − 1 − seq, hex), then the user id. The cols
-- hash maps user → that prefix, so a member is found in O(1) and re-placed
-- atomically when its columns change.
-- KEYS: 1 z, 2 ev (dedupe hash), 3 m (projection versions), 4 meta,
--       5 cols (user → prefix), 6 md (user → metadata), then (optional)
--       the change feed — one hash tag.
-- ARGV: 1 op: apply | reverse | project,
--       2 event id (apply, reverse; '' for project), 3 user,
--       4 mode (apply: sum | gt | lt, in stored space; project: keep (API
--          projections: the seq changes only when the tuple does) | set
--          (ledger mode: the ledger's seq is the truth) | absent (ledger
--          mode: the member leaves the board, at its stored version too)),
--       5 stored delta, value or total, 6 B (0: tie member), 7 seq,
--       8 max |stored points|, 9 now (unix ms), 10 rules version,
--       11 '1' when the period is known frozen,
--       12 project: version; reverse: the original event id,
--       13 metadata: '' (the event carries none) or its JSON,
--       14 number of columns n, then per column 4 values: aggregate (sum |
--          last | max | min; '' in max/min families and projections, which
--          keep the whole tuple), value, max, hex width — negative for an
--          asc column (lower is better: encoded as max − value).
-- Values travel in value space; only the encoding flips asc columns, so the
-- comparisons here are always "a larger prefix is better".
-- Returns, like apply/reverse.lua, {status, score before or '', score after
-- or ''} (project: {status, version, before, after}) with status ok | same |
-- dup | closed | range | unknown | reversed | stale.
local z, ev, mk, meta, colsk, md = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local op, id, user, mode = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local v, B, seq, maxp = tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7]), tonumber(ARGV[8])
local n = tonumber(ARGV[14])
local spec, colw = {}, 0
for i = 1, n do
  local b = 14 + (i - 1) * 4
  local w = tonumber(ARGV[b + 4])
  local asc = w < 0
  if asc then w = -w end
  spec[i] = {agg = ARGV[b + 1], v = tonumber(ARGV[b + 2]), max = tonumber(ARGV[b + 3]), w = w, asc = asc}
  colw = colw + w
end
local sw = 0
if B > 0 then sw = #string.format('%x', B - 1) end

-- values: a prefix's column part → column values (value space).
local function values(prefix)
  local out, pos = {}, 1
  for i, c in ipairs(spec) do
    local x = tonumber(string.sub(prefix, pos, pos + c.w - 1), 16)
    if c.asc then x = c.max - x end
    out[i] = x
    pos = pos + c.w
  end
  return out
end

-- colpart: column values → the column part of a prefix.
local function colpart(vals)
  local parts = {}
  for i, c in ipairs(spec) do
    local x = vals[i]
    if c.asc then x = c.max - x end
    parts[i] = string.format('%0' .. c.w .. 'x', x)
  end
  return table.concat(parts)
end

local function seqpart(s)
  if sw == 0 then return '' end
  return string.format('%0' .. sw .. 'x', B - 1 - s)
end

local function seqof(prefix)
  if sw == 0 then return 0 end
  return B - 1 - tonumber(string.sub(prefix, colw + 1, colw + sw), 16)
end

local function inrange(vals)
  for i, c in ipairs(spec) do
    if vals[i] < 0 or vals[i] > c.max then return false end
  end
  return true
end

local prefix = redis.call('HGET', colsk, user)
local stored, cur = nil, nil
if prefix then
  stored = prefix .. user
  cur = redis.call('ZSCORE', z, stored)
  if not cur then prefix, stored = nil, nil end
end
local P, curVals, curSeq = nil, nil, nil
if cur then
  P, curVals, curSeq = tonumber(cur), values(prefix), seqof(prefix)
end

-- place: move the member to (p, vals, s) and keep its prefix and metadata.
local function place(p, vals, s, meta_json)
  local np = colpart(vals) .. seqpart(s)
  if stored and np ~= prefix then redis.call('ZREM', z, stored) end
  local score = fmt(p)
  redis.call('ZADD', z, score, np .. user)
  redis.call('HSET', colsk, user, np)
  if meta_json ~= nil then set_metadata(md, user, meta_json) end
  -- One entry: a follower keys the member by its user id (the stored
  -- member's prefix has a fixed width), so it replaces the old placement.
  feed(np .. user, score)
  return score, np
end

local function remove()
  if stored then
    redis.call('ZREM', z, stored)
    feed(stored, '')
  end
  redis.call('HDEL', colsk, user)
  redis.call('HDEL', md, user)
end

if op == 'project' then
  local st = closed_state(meta)
  if st then return {'closed', st, cur or '', cur or ''} end
  local version = tonumber(ARGV[12])
  local sv = redis.call('HGET', mk, user)
  local cv = tonumber(sv or '0')
  if version < cv or (version == cv and mode ~= 'absent') then
    -- A replay: the stored version written back, as project.lua does, so a
    -- WAIT after this script covers the projection that stored it.
    if sv then redis.call('HSET', mk, user, sv) end
    return {'stale', fmt(cv), cur or '', cur or ''}
  end
  if mode == 'absent' then
    touch_meta(meta, ARGV[9], ARGV[10])
    remove()
    redis.call('HSET', mk, user, fmt(version))
    return {'ok', fmt(version), cur or '', ''}
  end
  local newVals = {}
  for i, c in ipairs(spec) do newVals[i] = c.v end
  if v > maxp or v < -maxp or not inrange(newVals) then return {'range', fmt(cv), cur or '', cur or ''} end
  local useSeq = seq
  if mode ~= 'set' and P ~= nil and P == v and colpart(newVals) == string.sub(prefix, 1, colw) then useSeq = curSeq end
  if B > 0 and (useSeq < 0 or useSeq >= B) then return {'range', fmt(cv), cur or '', cur or ''} end
  touch_meta(meta, ARGV[9], ARGV[10])
  local score = place(v, newVals, useSeq, ARGV[13])
  redis.call('HSET', mk, user, fmt(version))
  return {'ok', fmt(version), cur or '', score}
end

if redis.call('HEXISTS', ev, id) == 1 then return replay(ev, id, 'dup', cur) end
local st = closed_state(meta)
if not st and ARGV[11] == '1' then st = 'frozen' end
if st then return {'closed', st, cur or ''} end

if op == 'apply' then
  local newP, newVals
  if mode == 'sum' then
    newP = (P or 0) + v
    newVals = {}
    for i, c in ipairs(spec) do
      local old = nil
      if curVals then old = curVals[i] end
      local x = c.v
      if old ~= nil then
        if c.agg == 'sum' then x = old + c.v
        elseif c.agg == 'max' then x = math.max(old, c.v)
        elseif c.agg == 'min' then x = math.min(old, c.v)
        end
      end
      newVals[i] = x
    end
  elseif mode == 'gt' or mode == 'lt' then
    local cand = {}
    for i, c in ipairs(spec) do cand[i] = c.v end
    local better = P == nil or (mode == 'gt' and v > P) or (mode == 'lt' and v < P)
    if not better and v == P then
      better = bytes_lt(string.sub(prefix, 1, colw), colpart(cand))
    end
    if better then newP, newVals = v, cand end
  else
    return redis.error_reply('ERR rankgate columns: bad mode')
  end
  if newP ~= nil then
    if newP > maxp or newP < -maxp or not inrange(newVals) then return {'range', cur or '', cur or ''} end
    if B > 0 and (seq < 0 or seq >= B) then return {'range', cur or '', cur or ''} end
  end
  touch_meta(meta, ARGV[9], ARGV[10])
  if newP == nil then
    redis.call('HSET', ev, id, '0|' .. fmt(curSeq or -1) .. '|' .. fmt(curSeq or -1) .. '|' .. (prefix or '') .. '|' .. (prefix or ''))
    return {'same', cur, cur}
  end
  local score, np = place(newP, newVals, seq, ARGV[13])
  local before = -1
  if P ~= nil then before = curSeq end
  -- record: applied delta | seq before | seq after | prefix before | prefix after
  -- [| e<removal epoch> once a moderator removed the member (remove.lua)]
  redis.call('HSET', ev, id, fmt(newP - (P or 0)) .. '|' .. fmt(before) .. '|' .. fmt(seq) .. '|' .. (prefix or '') .. '|' .. np .. removal_tag(ev, user))
  -- '#n:<user>' counts live changes when there are two or more (apply.lua).
  if P ~= nil then
    local f = '#n:' .. user
    if redis.call('HEXISTS', ev, f) == 1 then redis.call('HINCRBY', ev, f, 1) else redis.call('HSET', ev, f, 2) end
  end
  return {'ok', cur or '', score}
end

if op ~= 'reverse' then return redis.error_reply('ERR rankgate columns: bad op') end
local oid = ARGV[12]
local reply, rec, recEpoch, caps = read_original(ev, oid, cur, '^(-?%d+)|(-?%d+)|(-?%d+)|([0-9a-f]*)|([0-9a-f]*)(.*)$')
if reply then return reply end
local d, sb, sa, pb, pa = tonumber(caps[1]), tonumber(caps[2]), tonumber(caps[3]), caps[4], caps[5]
-- A moderator removed the member after the original (remove.lua): the
-- member started afresh; the reversal is recorded and changes nothing.
if removed_since(ev, user, recEpoch) then
  return void_reversal(meta, ARGV[9], ARGV[10], ev, oid, rec, id, cur)
end
local newP = (P or 0) - d
if newP > maxp or newP < -maxp then return {'range', cur or '', cur or ''} end
-- Columns: a sum column gives back what the event added; a last/max/min
-- column returns to its value before the event when the event is still the
-- member's latest change (its columns are the ones it set), else stays.
local latest = prefix ~= nil and string.sub(prefix, 1, colw) == string.sub(pa, 1, colw)
local newVals = {}
local va = values(pa)
local vb = nil
if pb ~= '' then vb = values(pb) end
for i, c in ipairs(spec) do
  local x = 0
  if curVals then x = curVals[i] end
  if c.agg == 'sum' then
    local added = va[i]
    if vb then added = va[i] - vb[i] end
    x = x - added
  elseif latest and vb then
    x = vb[i]
  end
  newVals[i] = x
end
local live = live_changes(ev, user, cur)
local gone = live <= 1
local after = ''
local newSeq = seq
if gone and newP == 0 then
  remove()
  newSeq = -1
else
  if not inrange(newVals) then return {'range', cur or '', cur or ''} end
  if B > 0 then
    if (curSeq == sa) and sb >= 0 then newSeq = sb end
    if newSeq < 0 or newSeq >= B then return {'range', cur or '', cur or ''} end
  end
  after = place(newP, newVals, newSeq, nil)
end
record_reversal(meta, ARGV[9], ARGV[10], ev, user, oid, rec, id, live, d, curSeq, newSeq)
return {'ok', cur or '', after}
