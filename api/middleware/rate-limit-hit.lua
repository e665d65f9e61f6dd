-- Counts one request in its window: INCR, and the window's expiry set on the first hit, at
-- once. Returns {count, ms left in the window, the read cache's change epoch}: the epoch rides
-- on this round trip, which every request makes anyway (core/platform/db/read-cache.ts).
--! KEYS: window epoch
--! ARGV: window_ms
local c = redis.call('INCR', KEYS[1])
if c == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
return {c, redis.call('PTTL', KEYS[1]), redis.call('GET', KEYS[2]) or '0'}
