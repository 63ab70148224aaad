--[[
  Records a tool call's result and replies with the recorded one, in one round trip: `record-result-2.lua`
  and the reply push together. Only on a single Redis: in a cluster the dispatcher's reply list is on
  another slot, and the two are separate steps there (the record first, so that a reply lost on the way is
  still found in it). The first recorded result of a call wins (HSETNX): when one is already there, the new
  one is not stored, and the recorded one is replied and returned. Only a call the run's ledger holds is
  recorded or replied (see `record-result-2.lua`): a run's final checkpoint deletes its ledger, and a late
  result of a finished run is neither written into its record nor replied to a dispatcher that has moved on.

  KEYS[1] run results (hash)
  KEYS[2] the dispatcher's reply list
  KEYS[3] run call ledger (hash)

  ARGV[1] tool call id
  ARGV[2] result JSON
  ARGV[3] TTL of the results hash and of the reply list (set when the push creates it), in s
  ARGV[4] the reply's envelope up to the result (`replyPrefix(runId)`); the reply is it, the recorded
          result's JSON and `}`

  Returns the recorded result when this one was a duplicate, else nil.
]]
if redis.call('HEXISTS', KEYS[3], ARGV[1]) == 0 then return false end
local recorded = false
if redis.call('HSETNX', KEYS[1], ARGV[1], ARGV[2]) == 0 then
  recorded = redis.call('HGET', KEYS[1], ARGV[1])
else
  redis.call('EXPIRE', KEYS[1], ARGV[3])
end
-- A list that held replies already got its TTL from the push that created it (the dispatcher pops until
-- it is empty, which deletes it, so a list lives only while replies wait in it).
if redis.call('LPUSH', KEYS[2], ARGV[4] .. (recorded or ARGV[2]) .. '}') == 1 then
  redis.call('EXPIRE', KEYS[2], ARGV[3])
end
return recorded
