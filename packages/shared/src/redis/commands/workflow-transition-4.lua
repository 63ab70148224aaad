--[[
  One transition of a workflow, applied once: sets a field of the node-start, node-result or meta hash
  unless it is set (HSETNX), and only then appends the events and stamps the record. A finished workflow
  (its `outcome` set) takes no more transitions. Setting `outcome` ends the workflow: status and finish
  time are written and every key of the workflow expires after the retention. All keys share the
  workflow's hash tag; trimming the index is the caller's.

  KEYS[1] workflow meta (hash)
  KEYS[2] node starts (hash)
  KEYS[3] node results (hash)
  KEYS[4] workflow events (stream)

  ARGV[1] target: started | done | outcome
  ARGV[2] field (node id, or `outcome`)
  ARGV[3] value (JSON)
  ARGV[4] now, epoch ms
  ARGV[5] retention, in s
  ARGV[6] final status ('' unless the target is outcome)
  ARGV[7 ..] events (JSON)

  Returns 1 when applied, 0 when the field was set already or the workflow is finished.
]]
if redis.call('HEXISTS', KEYS[1], 'outcome') == 1 then return 0 end
local target = KEYS[1]
if ARGV[1] == 'started' then target = KEYS[2] elseif ARGV[1] == 'done' then target = KEYS[3] end
if redis.call('HSETNX', target, ARGV[2], ARGV[3]) == 0 then return 0 end
for i = 7, #ARGV do redis.call('XADD', KEYS[4], '*', 'e', ARGV[i]) end
redis.call('HSET', KEYS[1], 'updatedAt', ARGV[4])
-- A low-confidence node result marks the workflow so, for listings that read the meta hash alone.
if ARGV[1] == 'done' and cjson.decode(ARGV[3]).low_confidence == true then
  redis.call('HSET', KEYS[1], 'low_confidence', '1')
end
if ARGV[1] == 'outcome' then
  local ttl = tonumber(ARGV[5])
  redis.call('HSET', KEYS[1], 'status', ARGV[6], 'finishedAt', ARGV[4])
  for i = 1, 4 do redis.call('EXPIRE', KEYS[i], ttl) end
end
return 1
