-- Cancels a booking's reminders and leaves its tombstone: `state` (cancelled | rescheduled, with
-- the new uid, or ''), or `booking_json` for a booking never seen. A seated booking (`seated`
-- '1', or stored seated) whose event names (`named_json`: normalized emails) only some of its
-- attendees loses only those: their reminders are cancelled, they are recorded as left at
-- `event_at`, and the booking stays active. Returns {outcome, reminders stopped}: outcome
-- cancelled | seats_cancelled | unchanged. Cancelled reminders leave the firm's count (`due`).
--! KEYS: booking due
--! ARGV: state booking_json now expire_at rescheduled_to seated named_json event_at
local key, due_key = KEYS[1], KEYS[2]
local now, expire_at = tonumber(ARGV[3]), tonumber(ARGV[4])
local raw = redis.call('HGET', key, 'booking')
local b
if raw then
  b = cjson.decode(raw)
  if b.state ~= 'active' then
    extend_expiry(key, now, expire_at)
    return {'unchanged', 0}
  end
  local named = cjson.decode(ARGV[7])
  if (ARGV[6] == '1' or b.seated) and #named > 0 and type(b.people) == 'table' then
    local is_named = {}
    for _, email in ipairs(named) do is_named[email] = true end
    local stay = {}
    for _, p in ipairs(b.people) do
      if not is_named[p.email] then table.insert(stay, p) end
    end
    if #stay > 0 then
      -- Some seats leave; the booking goes on for the others (and the firm).
      local n = 0
      each_reminder(key, function(field, r)
        if r.role == 'attendee' and is_named[r.to] then n = n + cancel_one(key, field, r, now, due_key) end
      end)
      if #stay < #b.people then
        if type(b.left) ~= 'table' then b.left = {} end
        for _, p in ipairs(b.people) do
          if is_named[p.email] then b.left[p.email] = tonumber(ARGV[8]) end
        end
        b.people = stay
        b.attendees = people_line(stay)
        redis.call('HSET', key, 'booking', cjson.encode(b))
      end
      extend_expiry(key, now, expire_at)
      return {'seats_cancelled', n}
    end
  end
  b.state = ARGV[1]
  b.cancelled_at = now
  if ARGV[5] ~= '' then b.rescheduled_to = ARGV[5] end
else
  b = cjson.decode(ARGV[2])
end
redis.call('HSET', key, 'booking', cjson.encode(b))
local n = cancel_pending(key, now, nil, due_key)
extend_expiry(key, now, expire_at)
return {'cancelled', n}
