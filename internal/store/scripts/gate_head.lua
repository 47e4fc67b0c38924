-- gate_head.lua: runs first in a tournament's gated write (apply or columns
-- body, gate_tail.lua after it). The caller appends to KEYS the board
-- shard's joins hash and attempts hash (same hash tag), and to ARGV: the
-- event id, the member, join required ('1' | '0'), max attempts (0: none),
-- '~gate'. They are taken off here, so the body and common.lua see exactly
-- the KEYS and ARGV of an ungated call (the change feed still last).
local G_JN, G_AT, G_ID, G_MEMBER, G_REQ, G_MAX = nil, nil, nil, nil, false, 0
local KEYS, ARGV = KEYS, ARGV
if ARGV[#ARGV] == '~gate' then
  local nk, na = #KEYS, #ARGV
  G_JN, G_AT = KEYS[nk - 1], KEYS[nk]
  G_ID, G_MEMBER = ARGV[na - 4], ARGV[na - 3]
  G_REQ, G_MAX = ARGV[na - 2] == '1', tonumber(ARGV[na - 1])
  local k, a = {}, {}
  for i = 1, nk - 2 do k[i] = KEYS[i] end
  for i = 1, na - 5 do a[i] = ARGV[i] end
  KEYS, ARGV = k, a
end
