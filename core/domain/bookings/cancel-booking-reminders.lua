-- Cancels a booking's reminders and leaves its tombstone: `state` (cancelled | rescheduled, with
-- the new uid, or ''), or `booking_json` for a booking never seen. A seated booking (`seated`
-- '1', or stored seated) whose event names (`named_json`: normalized emails) only some of its
-- attendees, or one, loses only those: their reminders are cancelled (the firm's too when no one
-- is left on it), they are recorded as left at `event_at` (also one not on it yet), and the
-- booking stays active. So does a seated booking never seen whose cancel or reschedule names one
-- attendee (a seat's), with no one on it yet, when `booking_json` has the booking's own time
-- (`own_time` '1': a cancel's; a reschedule's when Cal.com sent the old time). Returns {outcome,
-- reminders stopped}: outcome cancelled | seats_cancelled | unchanged. Cancelled reminders leave
-- the firm's count (`due`).
--! KEYS: booking due
--! ARGV: state booking_json now expire_at rescheduled_to seated named_json event_at own_time
local key, due_key = KEYS[1], KEYS[2]
local now, expire_at = tonumber(ARGV[3]), tonumber(ARGV[4])
local named, at = cjson.decode(ARGV[7]), tonumber(ARGV[8])
local raw = redis.call('HGET', key, 'booking')
local b
if raw then
  b = cjson.decode(raw)
  if b.state ~= 'active' then
    extend_expiry(key, now, expire_at)
    return {'unchanged', 0}
  end
  if (ARGV[6] == '1' or b.seated) and #named > 0 and type(b.people) == 'table' then
    local is_named = {}
    for _, email in ipairs(named) do is_named[email] = true end
    local stay = {}
    for _, p in ipairs(b.people) do
      if not is_named[p.email] then table.insert(stay, p) end
    end
    -- Some stay, or the event names one attendee: a seat's, whoever else is known on it. Cal.com
    -- names every attendee in a whole cancel (one only when the booking has one), and one in a
    -- seat's; another seat's CREATED may still be on its way, and is applied whichever comes first.
    if #stay > 0 or #named == 1 then
      -- Some seats leave; the booking goes on for the others (and the firm, while one is on it:
      -- with no one left the firm's reminders are cancelled too, and come back with the next seat).
      local n = 0
      local empty = #stay == 0
      each_reminder(key, function(field, r)
        if (r.role == 'attendee' and is_named[r.to]) or (empty and r.role ~= 'attendee') then
          n = n + cancel_one(key, field, r, now, due_key)
        end
      end)
      -- Each one named has left, also one whose seat's CREATED has not come yet (it stays out when
      -- it arrives, being older).
      if type(b.left) ~= 'table' then b.left = {} end
      for _, email in ipairs(named) do
        if b.left[email] == nil or b.left[email] < at then b.left[email] = at end
      end
      b.people = stay
      b.attendees = people_line(stay)
      redis.call('HSET', key, 'booking', cjson.encode(b))
      extend_expiry(key, now, expire_at)
      return {'seats_cancelled', n}
    end
  end
  b.state = ARGV[1]
  b.cancelled_at = now
  if ARGV[5] ~= '' then b.rescheduled_to = ARGV[5] end
else
  b = cjson.decode(ARGV[2])
  if ARGV[9] == '1' and ARGV[6] == '1' and #named == 1 then
    -- A seated booking first seen by a cancel or reschedule naming one attendee: Cal.com cancels
    -- or moves a seat so (the whole of a booking with other seats names them all). The booking
    -- stays active at its own time for the seats whose CREATED is still to come, with no one on
    -- it yet, and this one has left.
    b.state = 'active'
    b.cancelled_at = nil
    b.rescheduled_to = nil
    b.people = {}
    b.attendees = ''
    b.left = { [named[1]] = at }
    redis.call('HSET', key, 'booking', cjson.encode(b))
    extend_expiry(key, now, expire_at)
    return {'seats_cancelled', 0}
  end
end
redis.call('HSET', key, 'booking', cjson.encode(b))
local n = cancel_pending(key, now, nil, due_key)
extend_expiry(key, now, expire_at)
return {'cancelled', n}
