-- Frees expired leases; a member that holds a slot keeps it (its lease renewed); else it takes
-- a free one; else its waiter ref (unless '') joins the firm's waiters, keeping its place if it
-- is there already, and the firm joins the reaper's list. Returns 1 when the slot is held.
-- `place`: the waiter's place in line (lowest first).
--! KEYS: slots waiters firms
--! ARGV: member now lease_end max waiter firm place
local now = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZSCORE', KEYS[1], ARGV[1]) or redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[4]) then
  redis.call('ZADD', KEYS[1], ARGV[3], ARGV[1])
  if ARGV[5] ~= '' then redis.call('ZREM', KEYS[2], ARGV[5]) end
  return 1
end
if ARGV[5] ~= '' then
  redis.call('ZADD', KEYS[2], 'NX', tonumber(ARGV[7]), ARGV[5])
  redis.call('SADD', KEYS[3], ARGV[6])
end
return 0
