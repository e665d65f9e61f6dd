-- Records how a send attempt ended: outcome sent | retry | failed, with the message id or the
-- error in `detail`. `sent` is recorded whatever attempt holds the reminder: the mail went out.
-- Returns the reminder's status ('missing', 'superseded': another attempt holds it).
--! KEYS: booking
--! ARGV: field token outcome now detail
local key, field, now = KEYS[1], ARGV[1], tonumber(ARGV[4])
local raw = redis.call('HGET', key, field)
if not raw then return 'missing' end
local r = cjson.decode(raw)
if ARGV[3] == 'sent' then
  r.status = 'sent'
  r.sent_at = now
  r.message_id = ARGV[5]
  r.last_error = nil
elseif r.status ~= 'sending' or r.token ~= ARGV[2] then
  return 'superseded'
else
  if r.cancel_requested then
    r.status = 'cancelled'
    r.cancelled_at = now
  elseif ARGV[3] == 'retry' then
    r.status = 'scheduled'
  else
    r.status = 'failed'
  end
  r.last_error = ARGV[5]
end
r.token = nil
r.lease_until = nil
r.cancel_requested = nil
redis.call('HSET', key, field, cjson.encode(r))
return r.status
