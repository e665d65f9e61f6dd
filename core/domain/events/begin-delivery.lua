-- A fan-out's first look at one lane for one event: whether its delivery may be sent at once.
-- Free: no earlier event of the subject is still to be fanned out (`due`, scored by occurred_at)
-- and no earlier delivery of the lane is unsettled (`lane`, text order). A free delivery joins its
-- lane (it is in flight: a later one waits for it) and, when `clear` is 1, the event leaves `due`.
-- A held one changes nothing: its caller makes its record, joins the lane, then clears `due`.
-- Returns 1 (free, joined) or 0 (held).
--! KEYS: due lane
--! ARGV: event at member clear
local at = tonumber(ARGV[2])
local found = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', at, 'WITHSCORES', 'LIMIT', 0, 20)
for i = 1, #found, 2 do
  local id = found[i]
  local score = tonumber(found[i + 1])
  if id ~= ARGV[1] and (score < at or id < ARGV[1]) then return 0 end
end
if #redis.call('ZRANGEBYLEX', KEYS[2], '-', '(' .. ARGV[3], 'LIMIT', 0, 1) > 0 then return 0 end
redis.call('ZADD', KEYS[2], 0, ARGV[3])
if ARGV[4] == '1' then redis.call('ZREM', KEYS[1], ARGV[1]) end
return 1
