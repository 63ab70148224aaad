#!lua
--[[
  One checkpoint of a run, fenced and sequenced. Nothing is written unless every check passes:
  - the caller's ownership epoch is the run's current one (a scheduler that lost the run is refused);
  - the record is not final (a finished run is never written again);
  - the checkpoint's step number is the next one (a re-sent step is a no-op, a gap is refused);
  - the stored message count is the one the step was prepared against.
  Then it appends (or rewrites) messages, sets the state, adds events, records the calls of the model
  turn in the run's ledger, updates the listing, and on the run's end sets the retention TTLs and deletes
  the ledger, the starts and the results-hash entries the final record holds elsewhere. Every key
  is the run's (one slot in a cluster): the index of runs is written by the caller, not here. The shebang makes Redis refuse the whole script up front when it is out of memory, so a record
  is never half-written.

  KEYS[1] run meta (hash)
  KEYS[2] run state (string)
  KEYS[3] run messages (list)
  KEYS[4] run events (stream)
  KEYS[5] run results (hash)
  KEYS[6] run approvals (hash)
  KEYS[7] run call ledger (hash)
  KEYS[8] run call starts (hash)

  ARGV epoch, seq, base, rewrite, state (a base, '\n' and a delta, or ''), n, messages…, n, events…, n, meta fields…, n,
       (call id, entry)…, final ('1' or '0'), retention TTL in s, then on the run's end the call ids
       whose results-hash entries the final record holds elsewhere (each call's tool message and step)

  Returns { verdict, cancel }: verdict is ok | dup | fenced | final | gap.
]]
local cur = redis.call('HMGET', KEYS[1], 'epoch', 'seq', 'final', 'cancel_requested')
local cancel = cur[4] or ''
if cur[1] ~= ARGV[1] then return { 'fenced', cancel } end
local stored = tonumber(cur[2] or '0')
local seq = tonumber(ARGV[2])
if seq <= stored then return { 'dup', cancel } end
if cur[3] == '1' then return { 'final', cancel } end
if seq ~= stored + 1 then return { 'gap', cancel } end
if ARGV[4] ~= '1' and redis.call('LLEN', KEYS[3]) ~= tonumber(ARGV[3]) then return { 'gap', cancel } end
local i = 6
if ARGV[4] == '1' then redis.call('DEL', KEYS[3]) end
local n = tonumber(ARGV[i]); i = i + 1
for j = i, i + n - 1, 200 do redis.call('RPUSH', KEYS[3], unpack(ARGV, j, math.min(j + 199, i + n - 1))) end
i = i + n
-- The state: a base replaces the record, a delta line (starting with a line feed) is appended to it, and
-- nothing is written when nothing changed (see protocol's state-record.ts).
if string.sub(ARGV[5], 1, 1) == '\n' then redis.call('APPEND', KEYS[2], ARGV[5])
elseif ARGV[5] ~= '' then redis.call('SET', KEYS[2], ARGV[5]) end
n = tonumber(ARGV[i]); i = i + 1
for j = i, i + n - 1 do redis.call('XADD', KEYS[4], '*', 'e', ARGV[j]) end
i = i + n
n = tonumber(ARGV[i]); i = i + 1
redis.call('HSET', KEYS[1], 'seq', seq, unpack(ARGV, i, i + n - 1))
i = i + n
n = tonumber(ARGV[i]); i = i + 1
for j = i, i + n - 1, 2 do redis.call('HSETNX', KEYS[7], ARGV[j], ARGV[j + 1]) end
i = i + n
local ttl = tonumber(ARGV[i + 1])
if n > 0 then redis.call('EXPIRE', KEYS[7], ttl) end
if ARGV[i] == '1' then
  redis.call('HSET', KEYS[1], 'final', '1')
  -- A finished run's event stream takes no more events. Redis allocates each stream node 4 KB ahead, so
  -- a run's last node is mostly empty; restored from its own dump (same entries and ids, blocked readers
  -- served as before) every node holds just its bytes: about 3.4 KB less per finished run. Bounded, so a
  -- long run's end stays a short script.
  if redis.call('XLEN', KEYS[4]) <= 1000 then
    local dump = redis.call('DUMP', KEYS[4])
    if dump then redis.call('RESTORE', KEYS[4], 0, dump, 'REPLACE') end
  end
  -- The ledger and the starts serve executors and dispatchers while calls may run: a final run's calls
  -- never start again (an executor's check refuses the job of a final run before it reads either), and
  -- no reader of a run's record needs them.
  redis.call('DEL', KEYS[7], KEYS[8])
  -- The results hash repeats each answered call's tool message (the step keeps the executor's tries and
  -- id): its entries go, but for calls whose message compaction folded away. Emptied, the hash is gone.
  for j = i + 2, #ARGV, 200 do redis.call('HDEL', KEYS[5], unpack(ARGV, j, math.min(j + 199, #ARGV))) end
  for i = 1, 6 do redis.call('EXPIRE', KEYS[i], ttl) end
end
return { 'ok', cancel }
