-- The dial slot (take-dial-slot.lua) and the number's frequency cap in one step. First, with
-- `check_ready` '1', the firm's attempts must be known to be complete (its `ready` mark, set once
-- they were rebuilt from the dial decisions after Redis lost them: frequency.ts): without it,
-- nothing is taken and {-2, '', 0} returned (the caller rebuilds the number's attempts and asks
-- again with check_ready '0'). Then the attempts older than 24 h are trimmed; a call not yet
-- counted, with `cap` attempts in the window already, takes nothing and returns {-1, oldest
-- attempt's time, count}. Else the dial slot as take-dial-slot.lua: held → the attempt is counted
-- (member = the call id, so a repeat counts once, at the time of its latest dial), the key
-- expires 24 h after it, {1, '', count}; no slot → the waiter joins the line, nothing is
-- counted, {0, '', count}.
--! KEYS: slots waiters firms attempts ready
--! ARGV: member now lease_end max waiter firm place attempt_now window_start cap ttl_ms check_ready
if ARGV[12] == '1' and redis.call('EXISTS', KEYS[5]) == 0 then return {-2, '', 0} end
local attempt_now = tonumber(ARGV[8])
redis.call('ZREMRANGEBYSCORE', KEYS[4], '-inf', ARGV[9])
local counted = redis.call('ZSCORE', KEYS[4], ARGV[1])
local count = redis.call('ZCARD', KEYS[4])
if not counted and count >= tonumber(ARGV[10]) then
  local oldest = redis.call('ZRANGE', KEYS[4], 0, 0, 'WITHSCORES')
  return {-1, oldest[2], count}
end
local now = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZSCORE', KEYS[1], ARGV[1]) or redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[4]) then
  redis.call('ZADD', KEYS[1], ARGV[3], ARGV[1])
  if ARGV[5] ~= '' then redis.call('ZREM', KEYS[2], ARGV[5]) end
  if not counted then
    redis.call('ZADD', KEYS[4], attempt_now, ARGV[1])
    count = count + 1
  elseif attempt_now > tonumber(counted) then
    -- The same call dialled again later (a retry after a failed dial, deferred meanwhile): it
    -- counts once, at its latest dial, so it stays in the window for 24 h after that dial.
    redis.call('ZADD', KEYS[4], attempt_now, ARGV[1])
  end
  redis.call('PEXPIRE', KEYS[4], ARGV[11])
  return {1, '', count}
end
if ARGV[5] ~= '' then
  redis.call('ZADD', KEYS[2], 'NX', tonumber(ARGV[7]), ARGV[5])
  redis.call('SADD', KEYS[3], ARGV[6])
end
return {0, '', count}
