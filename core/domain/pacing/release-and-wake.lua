-- Releases the member (unless ''), frees expired leases, and pops as many waiters as there are
-- free slots (first in line first) into the waking set, each due back by wake_lease_end: the
-- caller promotes them, then clears them from it. The firm leaves the reaper's list when it has
-- no waiters left. Returns {ref, place, ref, place, ...}.
--! KEYS: slots waiters firms waking
--! ARGV: member now max firm wake_lease_end
if ARGV[1] ~= '' then redis.call('ZREM', KEYS[1], ARGV[1]) end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', tonumber(ARGV[2]))
local free = tonumber(ARGV[3]) - redis.call('ZCARD', KEYS[1])
local woken = {}
if free > 0 then woken = redis.call('ZPOPMIN', KEYS[2], free) end
for i = 1, #woken, 2 do redis.call('ZADD', KEYS[4], tonumber(ARGV[5]), woken[i]) end
if redis.call('ZCARD', KEYS[2]) == 0 and redis.call('ZCARD', KEYS[4]) == 0 then
  redis.call('SREM', KEYS[3], ARGV[4])
end
return woken
