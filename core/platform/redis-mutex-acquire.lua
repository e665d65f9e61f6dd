-- Takes the lock, or keeps it (its expiry renewed) when its holder is this token: an owner
-- re-entering after a crash. Returns 1 when held, 0 when another holder has it.
--! KEYS: lock
--! ARGV: token ttl_ms
if redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2], 'NX') then return 1 end
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
return 0
