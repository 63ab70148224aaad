--[[
  An executor records that it starts a call, right before running it: from then on the call counts as
  started, and its dispatcher waits for its result instead of publishing it again. Refused when the call
  has a result, or when its dispatcher withdrew this publication of it (or a later one) because nobody
  had started it by its deadline: a job taken from a queue the dispatcher gave up on never runs.

  KEYS[1] run results (hash)
  KEYS[2] run call starts (hash): call id → `started:<publication>:<executor>` | `withdrawn:<publication>`

  ARGV[1] tool call id
  ARGV[2] the job's publication (its `enqueued_at`, epoch ms)
  ARGV[3] executor id
  ARGV[4] TTL of the starts hash, in s

  Returns { 'started' } | { 'recorded', result JSON } | { 'withdrawn' }.
]]
local recorded = redis.call('HGET', KEYS[1], ARGV[1])
if recorded then return { 'recorded', recorded } end
local current = redis.call('HGET', KEYS[2], ARGV[1])
if current then
  local withdrawn = tonumber(string.match(current, '^withdrawn:(%d+)$') or '')
  if withdrawn and withdrawn >= tonumber(ARGV[2]) then return { 'withdrawn' } end
end
redis.call('HSET', KEYS[2], ARGV[1], 'started:' .. ARGV[2] .. ':' .. ARGV[3])
redis.call('EXPIRE', KEYS[2], ARGV[4])
return { 'started' }
