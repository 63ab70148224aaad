--[[
  Records a tool call's result and replies in one script call. The first recorded result of a call wins
  (HSETNX): when one is already there, the new one is not stored (nor its full content) and the reply
  carries the recorded one, so the waiting dispatcher gets what the record says.

  KEYS[1] run results (hash)
  KEYS[2] the dispatcher's reply list
  KEYS[3] the ref hash of the full content (KEYS[1] again when the result was not cut)

  ARGV[1] tool call id
  ARGV[2] result JSON
  ARGV[3] reply prefix (`{"runId":…,"result":`)
  ARGV[4] TTL of results and replies, in s
  ARGV[5] the full content ('' when the result was not cut)
  ARGV[6] its TTL, in s
  ARGV[7] run id, ARGV[8] agent, ARGV[9] session id ('' for none): the content's owner

  Returns the recorded result when this one was a duplicate, else nil.
]]
if redis.call('HSETNX', KEYS[1], ARGV[1], ARGV[2]) == 0 then
  local recorded = redis.call('HGET', KEYS[1], ARGV[1])
  redis.call('LPUSH', KEYS[2], ARGV[3] .. recorded .. '}')
  redis.call('EXPIRE', KEYS[2], ARGV[4])
  return recorded
end
redis.call('EXPIRE', KEYS[1], ARGV[4])
if ARGV[5] ~= '' then
  redis.call('HSET', KEYS[3], 'content', ARGV[5], 'runId', ARGV[7], 'agent', ARGV[8], 'sessionId', ARGV[9])
  redis.call('EXPIRE', KEYS[3], ARGV[6])
end
redis.call('LPUSH', KEYS[2], ARGV[3] .. ARGV[2] .. '}')
redis.call('EXPIRE', KEYS[2], ARGV[4])
return false
