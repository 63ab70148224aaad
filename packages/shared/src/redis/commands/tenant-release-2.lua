--[[
  A run of a tenant ended: it leaves the tenant's runs in flight and, the first time only, its tokens
  are added to the tenant's tokens of the day. Both keys carry the tenant's hash tag.

  KEYS[1] the tenant's runs in flight (sorted set: run id → epoch ms admitted)
  KEYS[2] the tenant's tokens used today (string: an integer)

  ARGV[1] the run id
  ARGV[2] the tokens the run used
  ARGV[3] how long the day's count is kept, in seconds

  Returns 1 when the run was in flight (and is counted now), else 0.
]]
if redis.call('ZREM', KEYS[1], ARGV[1]) == 0 then return 0 end
local tokens = tonumber(ARGV[2]) or 0
if tokens > 0 then
  redis.call('INCRBY', KEYS[2], tokens)
  redis.call('EXPIRE', KEYS[2], ARGV[3])
end
return 1
