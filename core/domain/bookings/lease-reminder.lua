-- Leases a reminder to this send attempt (`token`): scheduled → sending, held until
-- now + lease_ms. Returns {'leased', reminder JSON, booking JSON}, {'busy', lease end} or
-- {why not}.
--! KEYS: booking
--! ARGV: field now lease_ms token
local key, field, now = KEYS[1], ARGV[1], tonumber(ARGV[2])
local raw = redis.call('HGET', key, field)
local meta = redis.call('HGET', key, 'booking')
if not raw or not meta then return {'missing'} end
local r = cjson.decode(raw)
if r.status == 'sending' then
  if r.lease_until > now then return {'busy', tostring(r.lease_until)} end
  -- The attempt holding it died mid-send. A cancel since then wins; otherwise the send is
  -- repeated (SMTP cannot be asked whether it was accepted: at least once, never lost).
  if r.cancel_requested then
    r.status = 'cancelled'
    r.cancelled_at = now
    r.token = nil
    r.lease_until = nil
    redis.call('HSET', key, field, cjson.encode(r))
    return {'cancelled'}
  end
elseif r.status ~= 'scheduled' then
  return {r.status}
end
local b = cjson.decode(meta)
local deadline = b.end_at or (b.start_at + 3600000)
if now > deadline then
  r.status = 'failed'
  r.last_error = 'The booking was over before the reminder could be sent.'
  r.token = nil
  r.lease_until = nil
  redis.call('HSET', key, field, cjson.encode(r))
  return {'expired'}
end
r.status = 'sending'
r.token = ARGV[4]
r.lease_until = now + tonumber(ARGV[3])
r.attempts = (r.attempts or 0) + 1
local encoded = cjson.encode(r)
redis.call('HSET', key, field, encoded)
return {'leased', encoded, meta}
