--[[
  One try of a model request to take its provider's fleet-wide slot and rate start. Waiters are served
  in the order they first tried: a request is admitted only while its rank among the live waiters is
  below what the limits leave free. A waiter that stopped trying (its scheduler died) drops out after
  the stale time; a slot whose lease ran out (its holder died mid-request) is freed. Times are Redis's
  own clock, so schedulers on different machines agree. All keys carry the provider's hash tag.

  KEYS[1] the provider's slots (sorted set: holder id → lease expiry, epoch ms)
  KEYS[2] the provider's starts in the rate window (sorted set: holder id → start, epoch ms)
  KEYS[3] the provider's waiters (sorted set: holder id → ticket, in the order of their first tries)
  KEYS[4] the provider's waiters' last tries (sorted set: holder id → last try, epoch ms)

  ARGV[1] the holder id (unique per request)
  ARGV[2] the lease, ms
  ARGV[3] the concurrency limit (0: none)
  ARGV[4] the most starts per window (0: none)
  ARGV[5] the rate window, ms
  ARGV[6] the time after which a waiter that stopped trying is dropped, ms

  Returns { 1, 0 } when admitted, else { 0, ms until the rate window frees a start (0: unknown) }.
]]
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local holder = ARGV[1]
local leaseMs = tonumber(ARGV[2])
local concurrency = tonumber(ARGV[3])
local rateMax = tonumber(ARGV[4])
local windowMs = tonumber(ARGV[5])
local staleMs = tonumber(ARGV[6])
local ttlMs = math.max(leaseMs, windowMs, staleMs) * 2

redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now - windowMs)
local stale = redis.call('ZRANGEBYSCORE', KEYS[4], '-inf', now - staleMs)
for _, id in ipairs(stale) do
  redis.call('ZREM', KEYS[3], id)
  redis.call('ZREM', KEYS[4], id)
end
if not redis.call('ZSCORE', KEYS[3], holder) then
  -- A ticket past every waiter's: first tries in the same millisecond keep their order too.
  local last = redis.call('ZRANGE', KEYS[3], -1, -1, 'WITHSCORES')
  redis.call('ZADD', KEYS[3], (tonumber(last[2]) or 0) + 1, holder)
end
redis.call('ZADD', KEYS[4], now, holder)

local free = 1000000000
if concurrency > 0 then free = math.min(free, concurrency - redis.call('ZCARD', KEYS[1])) end
local wait = 0
if rateMax > 0 then
  local left = rateMax - redis.call('ZCARD', KEYS[2])
  if left <= 0 then
    local oldest = redis.call('ZRANGE', KEYS[2], 0, 0, 'WITHSCORES')
    if oldest[2] then wait = math.max(1, tonumber(oldest[2]) + windowMs - now) end
  end
  free = math.min(free, left)
end
local rank = redis.call('ZRANK', KEYS[3], holder)
for i = 3, 4 do redis.call('PEXPIRE', KEYS[i], ttlMs) end
if free <= 0 or rank >= free then return { 0, wait } end

redis.call('ZREM', KEYS[3], holder)
redis.call('ZREM', KEYS[4], holder)
if concurrency > 0 then
  redis.call('ZADD', KEYS[1], now + leaseMs, holder)
  redis.call('PEXPIRE', KEYS[1], ttlMs)
end
if rateMax > 0 then
  redis.call('ZADD', KEYS[2], now, holder)
  redis.call('PEXPIRE', KEYS[2], ttlMs)
end
return { 1, 0 }
