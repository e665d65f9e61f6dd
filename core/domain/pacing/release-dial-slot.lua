-- A call's end releases its slot, in one step: returns -1 when it held none (released already: a
-- repeated event), 1 when waiters are in line (the caller wakes them, reading the firm's limit),
-- 0 when none are: then, with no wake-up under way either, the firm leaves the reaper's list.
--! KEYS: slots waiters firms waking
--! ARGV: member firm
if redis.call('ZREM', KEYS[1], ARGV[1]) == 0 then return -1 end
if redis.call('ZCARD', KEYS[2]) > 0 then return 1 end
if redis.call('ZCARD', KEYS[4]) == 0 then redis.call('SREM', KEYS[3], ARGV[2]) end
return 0
