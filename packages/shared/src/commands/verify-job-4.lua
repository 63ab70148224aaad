--[[
  One round trip for everything a tool job is checked against: the run's status, agent and session,
  the ledger's entry for the call, the person's decision and any recorded result.

  KEYS[1] run meta (hash)
  KEYS[2] run call ledger (hash)
  KEYS[3] run approvals (hash)
  KEYS[4] run results (hash)

  ARGV[1] tool call id

  Returns { status, agent, session id, ledger entry, decision, recorded result, grants } (nil where
  absent; grants: the run's granted tools, comma-separated).
]]
local meta = redis.call('HMGET', KEYS[1], 'status', 'agent', 'sessionId', 'grants')
return {
  meta[1], meta[2], meta[3],
  redis.call('HGET', KEYS[2], ARGV[1]),
  redis.call('HGET', KEYS[3], ARGV[1]),
  redis.call('HGET', KEYS[4], ARGV[1]),
  meta[4]
}
