-- The kill switch's windows of one campaign (core/domain/campaigns/kill-switch-windows.ts).
-- KEYS[1] is a hash of the campaign's calls (call id -> flags: 1 dialled, 2 ended, 4 opted out,
-- 8 dial failed); KEYS[2] the window of its last ended calls and KEYS[3] of its last dial
-- attempts, call ids newest first, trimmed to `max`. A call enters each window once, when its
-- flag is first set, so a repeated event never counts twice; its outcome (opted out, failed)
-- is a flag, read when the window is counted, so an outcome learnt later still counts.
-- what: dial | dial_failed | end | end_opt_out | count. calls_window / dials_window: how many of
-- each window to count (0: none). Returns {opt_outs, calls, dial_failures, dials}.
--! KEYS: marks calls dials
--! ARGV: call what calls_window dials_window max ttl_ms
local call = ARGV[1]
local what = ARGV[2]
local max = tonumber(ARGV[5])
local flags = tonumber(redis.call('HGET', KEYS[1], call) or '0')
local function has(f, bit) return f % (bit * 2) >= bit end
local before = flags
local function set(bit)
  if not has(flags, bit) then flags = flags + bit end
end

if what ~= 'count' then
  set(1)
  if what == 'dial_failed' then set(8) end
  if what == 'end' or what == 'end_opt_out' then set(2) end
  if what == 'end_opt_out' then set(4) end
  if flags ~= before then
    redis.call('HSET', KEYS[1], call, flags)
    if not has(before, 1) then
      redis.call('LPUSH', KEYS[3], call)
      redis.call('LTRIM', KEYS[3], 0, max - 1)
    end
    if has(flags, 2) and not has(before, 2) then
      redis.call('LPUSH', KEYS[2], call)
      redis.call('LTRIM', KEYS[2], 0, max - 1)
    end
  end
  local ttl = tonumber(ARGV[6])
  redis.call('PEXPIRE', KEYS[1], ttl)
  redis.call('PEXPIRE', KEYS[2], ttl)
  redis.call('PEXPIRE', KEYS[3], ttl)
end

local function count(key, window, bit)
  if window <= 0 then return 0, 0 end
  local ids = redis.call('LRANGE', key, 0, window - 1)
  local n = 0
  for _, id in ipairs(ids) do
    if has(tonumber(redis.call('HGET', KEYS[1], id) or '0'), bit) then n = n + 1 end
  end
  return n, #ids
end

local opt_outs, calls = count(KEYS[2], tonumber(ARGV[3]), 4)
local failures, dials = count(KEYS[3], tonumber(ARGV[4]), 8)
return { opt_outs, calls, failures, dials }
