--[[
  Records a tool call's result: the first recorded result of a call wins (HSETNX). When one is already
  there the new one is not stored, and the recorded one is returned for the reply. The reply itself is
  pushed by the caller afterwards (the dispatcher's list is on another slot in a cluster): the record
  comes first, so a reply lost on the way is still found in it.

  KEYS[1] run results (hash)

  ARGV[1] tool call id
  ARGV[2] result JSON
  ARGV[3] TTL of the results hash, in s

  Returns the recorded result when this one was a duplicate, else nil.
]]
if redis.call('HSETNX', KEYS[1], ARGV[1], ARGV[2]) == 0 then
  return redis.call('HGET', KEYS[1], ARGV[1])
end
redis.call('EXPIRE', KEYS[1], ARGV[3])
return false
