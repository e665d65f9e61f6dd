-- After an attempt that settled a delivery: it leaves its lane. Returns the lane's next
-- unsettled member after the delivery (any generation of it excluded), or false.
--! KEYS: lane
--! ARGV: member delivery
redis.call('ZREM', KEYS[1], ARGV[1])
local next = redis.call('ZRANGEBYLEX', KEYS[1], '(' .. ARGV[2] .. '#~', '+', 'LIMIT', 0, 1)
return next[1] or false
