--[[
  A dispatcher whose call has no result at its deadline asks whether an executor started it, and if none
  did, withdraws that publication so that none can start it any more (`verify-start-5.lua` refuses it): the
  call can then be published again, or answered `unavailable`, without running twice. How BullMQ sees
  the job (waiting, active, locked, gone) does not matter here: after a failover it may say the job was
  taken by a worker that never got it.

  KEYS[1] run results (hash)
  KEYS[2] run call starts (hash)

  ARGV[1] tool call id
  ARGV[2] the publication withdrawn (its `enqueued_at`, epoch ms)
  ARGV[3] TTL of the starts hash, in s

  Returns { 'withdrawn' } | { 'started' } | { 'recorded', result JSON }.
]]
local recorded = redis.call('HGET', KEYS[1], ARGV[1])
if recorded then return { 'recorded', recorded } end
local current = redis.call('HGET', KEYS[2], ARGV[1])
if current and string.sub(current, 1, 8) == 'started:' then return { 'started' } end
redis.call('HSET', KEYS[2], ARGV[1], 'withdrawn:' .. ARGV[2])
redis.call('EXPIRE', KEYS[2], ARGV[3])
return { 'withdrawn' }
