import { RedisScript } from '../redis-script.js';

/**
 * Hands a replica a slice of one rate-limit allowance (SPEC §10; src/limits/). The window comes
 * from Redis's own clock (TIME), never a replica's: replicas whose clocks disagree still share
 * one window, and each learns how long it has left (a duration, not a date) to drop what is left
 * of its slice when it ends.
 *
 * KEYS[1] the allowance's hash (`w`: the window's id, `n`: units handed out in it).
 * ARGV: kind (`seconds` | `month`; a day is 86400 seconds), window seconds, limit, need, extra,
 * add (units a replica admitted on its own counters while Redis was away, counted first).
 * Grants `need` plus up to `extra` more when `need` fits under the limit, else nothing.
 * Returns {granted, units still free in the window, ms until the window ends, window id}.
 */
export const leaseRateLimitSlice = new RedisScript(
  'leaseRateLimitSlice',
  `
local t = redis.call('TIME')
local sec = tonumber(t[1])
local nowMs = sec * 1000 + math.floor(tonumber(t[2]) / 1000)
local id, endMs
if ARGV[1] == 'month' then
  -- civil date of the day (H. Hinnant's civil_from_days), then the first day of the next month
  local z = math.floor(sec / 86400) + 719468
  local era = math.floor(z / 146097)
  local doe = z - era * 146097
  local yoe = math.floor((doe - math.floor(doe / 1460) + math.floor(doe / 36524) - math.floor(doe / 146096)) / 365)
  local doy = doe - (365 * yoe + math.floor(yoe / 4) - math.floor(yoe / 100))
  local mp = math.floor((5 * doy + 2) / 153)
  local m = mp < 10 and mp + 3 or mp - 9
  local y = yoe + era * 400
  if m <= 2 then y = y + 1 end
  id = y * 12 + (m - 1)
  local ny, nm = y, m + 1
  if nm > 12 then nm = 1; ny = ny + 1 end
  local yy = ny
  if nm <= 2 then yy = ny - 1 end
  local era2 = math.floor(yy / 400)
  local yoe2 = yy - era2 * 400
  local mm = nm > 2 and nm - 3 or nm + 9
  local doe2 = yoe2 * 365 + math.floor(yoe2 / 4) - math.floor(yoe2 / 100) + math.floor((153 * mm + 2) / 5)
  endMs = (era2 * 146097 + doe2 - 719468) * 86400000
else
  local w = tonumber(ARGV[2])
  id = math.floor(sec / w)
  endMs = (id + 1) * w * 1000
end
local limit = tonumber(ARGV[3])
local need = tonumber(ARGV[4])
local extra = tonumber(ARGV[5])
local add = tonumber(ARGV[6])
local idText = string.format('%d', id)
local cur = redis.call('HMGET', KEYS[1], 'w', 'n')
local n = 0
if cur[1] == idText then n = tonumber(cur[2]) or 0 end
n = n + add
local granted = 0
if need > 0 and n + need <= limit then
  granted = need + math.min(extra, limit - n - need)
end
n = n + granted
redis.call('HSET', KEYS[1], 'w', idText, 'n', string.format('%d', n))
redis.call('PEXPIREAT', KEYS[1], endMs + 1000)
local free = limit - n
if free < 0 then free = 0 end
return {granted, free, endMs - nowMs, idText}
`,
);
