--[[
  Records a result the dispatcher gives itself (a call nobody started, or one that overran its
  deadline), unless the call already has one.

  KEYS[1] run results (hash)

  ARGV[1] tool call id
  ARGV[2] result JSON
  ARGV[3] TTL of the results hash, in s

  Returns the recorded result: the one already there, else this one.
]]
local existing = redis.call('HGET', KEYS[1], ARGV[1])
if existing then return existing end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('EXPIRE', KEYS[1], ARGV[3])
return ARGV[2]
