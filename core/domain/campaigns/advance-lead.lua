-- Moves one lead (a distinct phone) of a campaign forward: a state only moves forward
-- (placed -> completed | failed), and the counts move with it, so a repeated event never counts
-- twice. call_placed = '1': a call was placed for it (a lead that settles without ever being
-- 'placed' still counts as placed then). A lead that moves, or is placed again (a retry), is no
-- longer held by the dial gate: it leaves `waiting`. Returns {changed, placed, completed, failed}.
--! KEYS: leads counts waiting
--! ARGV: phone to call_placed
redis.call('ZREM', KEYS[3], ARGV[1])
local rank = { placed = 1, completed = 2, failed = 2 }
local from = redis.call('HGET', KEYS[1], ARGV[1])
local fromRank = 0
if from then fromRank = rank[from] end
local to = ARGV[2]
local changed = 0
if rank[to] > fromRank then
  redis.call('HSET', KEYS[1], ARGV[1], to)
  if fromRank == 0 and (to == 'placed' or ARGV[3] == '1') then redis.call('HINCRBY', KEYS[2], 'placed', 1) end
  if rank[to] == 2 then redis.call('HINCRBY', KEYS[2], to, 1) end
  changed = 1
end
local c = redis.call('HMGET', KEYS[2], 'placed', 'completed', 'failed')
return { changed, tonumber(c[1]) or 0, tonumber(c[2]) or 0, tonumber(c[3]) or 0 }
