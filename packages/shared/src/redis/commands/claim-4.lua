--[[
  Takes ownership of a run: bumps its epoch (so any earlier owner's writes are refused from now on) and
  reads its last checkpoint, the decisions people made since, and whether cancellation was requested.
  A run a door listed `queued` that has no checkpoint yet is `running` from now on.

  KEYS[1] run meta (hash)
  KEYS[2] run state (string)
  KEYS[3] run messages (list)
  KEYS[4] run approvals (hash)

  ARGV[1] now (epoch ms): the listing's update time when the run starts running

  Returns { epoch, seq, cancel flag, state, messages, decisions (field, value, …) }.
]]
local epoch = redis.call('HINCRBY', KEYS[1], 'epoch', 1)
local f = redis.call('HMGET', KEYS[1], 'seq', 'cancel_requested', 'status')
local state = redis.call('GET', KEYS[2]) or ''
if state == '' and f[1] == false and f[3] == 'queued' then
  redis.call('HSET', KEYS[1], 'status', 'running', 'updatedAt', ARGV[1])
end
return { epoch, f[1] or '0', f[2] or '', state, redis.call('LRANGE', KEYS[3], 0, -1), redis.call('HGETALL', KEYS[4]) }
