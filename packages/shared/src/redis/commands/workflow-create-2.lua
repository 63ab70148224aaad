--[[
  Creates a workflow's record unless it exists. The index entry (another slot on a cluster) is the
  caller's to add afterwards.

  KEYS[1] workflow meta (hash)
  KEYS[2] workflow events (stream)

  ARGV[1 .. n-1] field/value pairs of the meta hash
  ARGV[n]        the `workflow_started` event (JSON)

  Returns 1 when created, 0 when the workflow exists.
]]
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
local n = #ARGV
redis.call('HSET', KEYS[1], unpack(ARGV, 1, n - 1))
redis.call('XADD', KEYS[2], '*', 'e', ARGV[n])
return 1
