-- After an attempt: counts its outcome; a success ends the endpoint's failing streak; a settled
-- delivery (`leave` 1) leaves its lane. Returns the lane's next unsettled member after the
-- delivery (any generation of it excluded), or false.
--! KEYS: lane outcomes streak
--! ARGV: member delivery outcome ok leave
redis.call('HINCRBY', KEYS[2], ARGV[3], 1)
if ARGV[4] == '1' then redis.call('DEL', KEYS[3]) end
if ARGV[5] ~= '1' then return false end
redis.call('ZREM', KEYS[1], ARGV[1])
local next = redis.call('ZRANGEBYLEX', KEYS[1], '(' .. ARGV[2] .. '#~', '+', 'LIMIT', 0, 1)
return next[1] or false
