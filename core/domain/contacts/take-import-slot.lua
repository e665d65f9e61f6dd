-- Drops lapsed entries; adds the import when the firm has fewer than `max` pending, and keeps
-- the key no longer than its last entry. Returns 1 when the import was added, 0 when the firm
-- is at its limit.
--! KEYS: pending
--! ARGV: member now lapse_at max
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[2])
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[4]) then return 0 end
redis.call('ZADD', KEYS[1], ARGV[3], ARGV[1])
redis.call('PEXPIREAT', KEYS[1], redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')[2])
return 1
