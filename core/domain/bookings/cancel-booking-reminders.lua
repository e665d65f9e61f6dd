-- Cancels a booking's reminders and leaves its tombstone: `state` (cancelled | rescheduled, with
-- the new uid, or ''), or `booking_json` for a booking never seen. Returns {outcome, reminders
-- stopped}.
--! KEYS: booking
--! ARGV: state booking_json now expire_at rescheduled_to
local key = KEYS[1]
local now, expire_at = tonumber(ARGV[3]), tonumber(ARGV[4])
local raw = redis.call('HGET', key, 'booking')
local b
if raw then
  b = cjson.decode(raw)
  if b.state ~= 'active' then
    extend_expiry(key, now, expire_at)
    return {'unchanged', 0}
  end
  b.state = ARGV[1]
  b.cancelled_at = now
  if ARGV[5] ~= '' then b.rescheduled_to = ARGV[5] end
else
  b = cjson.decode(ARGV[2])
end
redis.call('HSET', key, 'booking', cjson.encode(b))
local n = cancel_pending(key, now, nil)
extend_expiry(key, now, expire_at)
return {'cancelled', n}
