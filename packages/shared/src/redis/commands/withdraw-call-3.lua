--[[
  A dispatcher whose call has no result at its deadline asks whether an executor started it, and if none
  did, withdraws that publication so that none can start it any more (`verify-start-4.lua` refuses it): the
  call can then be published again, or answered `unavailable`, without running twice. How BullMQ sees
  the job (waiting, active, locked, gone) does not matter here: after a failover it may say the job was
  taken by a worker that never got it.

  KEYS[1] run results (hash)
  KEYS[2] run call ledger (hash): the call's start or withdrawal is its field `<call id>:start`
  KEYS[3] run call starts (hash): where executors of the release before this one record starts and read
          withdrawals (call id → the same values). Read and written too, so that schedulers of this release
          and executors of the previous one agree while a fleet is upgraded (schedulers first).

  ARGV[1] tool call id
  ARGV[2] the publication withdrawn (its `enqueued_at`, epoch ms)
  ARGV[3] TTL in s of the ledger, should this write create it (a ledger a failover lost; a ledger keeps
          the TTL its checkpoint set), and of the starts hash

  Returns { 'withdrawn' } | { 'started' } | { 'recorded', result JSON }.
]]
local recorded = redis.call('HGET', KEYS[1], ARGV[1])
if recorded then return { 'recorded', recorded } end
local field = ARGV[1] .. ':start'
for _, current in ipairs({ redis.call('HGET', KEYS[2], field), redis.call('HGET', KEYS[3], ARGV[1]) }) do
  if current and string.sub(current, 1, 8) == 'started:' then return { 'started' } end
end
redis.call('HSET', KEYS[2], field, 'withdrawn:' .. ARGV[2])
redis.call('EXPIRE', KEYS[2], ARGV[3], 'NX')
redis.call('HSET', KEYS[3], ARGV[1], 'withdrawn:' .. ARGV[2])
redis.call('EXPIRE', KEYS[3], ARGV[3])
return { 'withdrawn' }
