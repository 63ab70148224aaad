--[[
  Renews a running request's lease on its provider's fleet-wide slot, on Redis's clock.

  KEYS[1] the provider's slots (sorted set: holder id → lease expiry, epoch ms)

  ARGV[1] the holder id
  ARGV[2] the lease, ms

  Returns 1 when the holder still held its slot and renewed it, else 0 (its lease ran out).
]]
if not redis.call('ZSCORE', KEYS[1], ARGV[1]) then return 0 end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local leaseMs = tonumber(ARGV[2])
redis.call('ZADD', KEYS[1], now + leaseMs, ARGV[1])
redis.call('PEXPIRE', KEYS[1], leaseMs * 2)
return 1
