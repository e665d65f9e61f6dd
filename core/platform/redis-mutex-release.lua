-- Deletes the lock only while this token holds it: a holder whose lock expired and was taken
-- by another cannot release the other's.
--! KEYS: lock
--! ARGV: token
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
