--[[
  Records a tool call's result: the first recorded result of a call wins (HSETNX). When one is already
  there the new one is not stored, and the recorded one is returned for the reply. The reply itself is
  pushed by the caller afterwards (the dispatcher's list is on another slot in a cluster): the record
  comes first, so a reply lost on the way is still found in it.
  Only a call the run's ledger holds is recorded: the ledger goes with the run's final checkpoint (which
  also deletes the results-hash entries its record holds elsewhere), so an executor that was paused past
  the run's end cannot write a result into a finished, perhaps archived, run; nor can a job whose call
  the run never made.

  KEYS[1] run results (hash)
  KEYS[2] run call ledger (hash)

  ARGV[1] tool call id
  ARGV[2] result JSON
  ARGV[3] TTL of the results hash, in s

  Returns the recorded result when this one was a duplicate, else nil (also when nothing was recorded
  because the ledger does not hold the call: nobody waits for it).
]]
if redis.call('HEXISTS', KEYS[2], ARGV[1]) == 0 then return false end
if redis.call('HSETNX', KEYS[1], ARGV[1], ARGV[2]) == 0 then
  return redis.call('HGET', KEYS[1], ARGV[1])
end
redis.call('EXPIRE', KEYS[1], ARGV[3])
return false
