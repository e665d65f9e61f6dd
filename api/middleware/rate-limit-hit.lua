-- One request against a sliding one-minute window (api/middleware/rate-limit.ts): a HASH of
-- counts by bucket (`window_ms / buckets` long each). The request is let in when fewer than
-- `limit` were let in over the current bucket and the `buckets` before it, a span a little
-- longer than the window, so no window-long span anywhere ever holds more than `limit`. Refused
-- requests are not counted, so the wait returned is exact: when enough of the oldest buckets
-- have left the span. With `count` 0 the request is not counted (a look before a delivery's body
-- is read); buckets past the span are dropped either way.
-- Returns {1 let in | 0 refused, ms to wait when refused}. (The read cache's change epoch is read
-- beside it, by a GET sent with it: on a Redis Cluster the two keys live in different slots.)
--! KEYS: counts
--! ARGV: now_ms window_ms buckets limit count
local now = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local buckets = tonumber(ARGV[3])
local limit = tonumber(ARGV[4])
local size = window / buckets
local current = math.floor(now / size)
local oldest = current - buckets

local flat = redis.call('HGETALL', KEYS[1])
local counts = {}
local total = 0
-- Buckets ahead of `current` come from a web process whose clock runs ahead: they count too.
local newest = current
for i = 1, #flat, 2 do
  local bucket = tonumber(flat[i])
  if bucket < oldest then
    redis.call('HDEL', KEYS[1], flat[i])
  else
    counts[bucket] = tonumber(flat[i + 1])
    total = total + counts[bucket]
    if bucket > newest then newest = bucket end
  end
end

if total < limit then
  if ARGV[5] == '1' then
    redis.call('HINCRBY', KEYS[1], string.format('%d', current), 1)
    -- The last bucket written leaves the span `buckets + 1` buckets after it began.
    redis.call('PEXPIRE', KEYS[1], window + size)
  end
  return {1, 0}
end
local left = total
for bucket = oldest, newest do
  left = left - (counts[bucket] or 0)
  if left < limit then return {0, (bucket + buckets + 1) * size - now} end
end
return {0, window}
