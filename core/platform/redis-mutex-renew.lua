-- Extends the lock's expiry while this token holds it. Returns 1, or 0 when it is not its own.
--! KEYS: lock
--! ARGV: token ttl_ms
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0
