--[[
  One executor heartbeat: prunes announcements past their expiry (Redis server time), writes this
  executor's with a fresh one, and keeps the hash itself alive at least as long. The announcement JSON
  is written with `expiresAt` first so that the pruning can read it without decoding.

  KEYS[1] the fleet catalog (hash)

  ARGV[1] executor id
  ARGV[2] TTL of the announcement, in ms
  ARGV[3] announcement JSON without `expiresAt`

  Returns Redis's time, in ms.
]]
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl = tonumber(ARGV[2])
local all = redis.call('HGETALL', KEYS[1])
for i = 1, #all, 2 do
  local expires = tonumber(string.match(all[i + 1], '^{"expiresAt":(%d+),'))
  if expires == nil or expires <= now then redis.call('HDEL', KEYS[1], all[i]) end
end
redis.call('HSET', KEYS[1], ARGV[1], '{"expiresAt":' .. string.format('%d', now + ttl) .. ',' .. string.sub(ARGV[3], 2))
if redis.call('PTTL', KEYS[1]) < ttl then redis.call('PEXPIRE', KEYS[1], ttl) end
return now
