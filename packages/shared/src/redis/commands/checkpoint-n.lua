#!lua
--[[
  One checkpoint of a run, fenced and sequenced. Nothing is written unless every check passes:
  - the caller's ownership epoch is the run's current one (a scheduler that lost the run is refused);
  - the record is not final (a finished run is never written again);
  - the checkpoint's step number is the next one (a re-sent step is a no-op, a gap is refused);
  - the stored message count is the one the step was prepared against (kept in the listing as `msgs`;
    counted with LLEN at a writer's first checkpoint, so a record another release wrote is checked as it is).
  Then it appends (or rewrites) messages, sets the state, adds events, records the calls of the model
  turn in the run's ledger, updates the listing, and on the run's end sets the retention TTLs and deletes
  the ledger, the starts and the results-hash entries the final record holds elsewhere. Every key
  is the run's (one slot in a cluster): the index of runs is written by the caller, not here. The shebang makes Redis refuse the whole script up front when it is out of memory, so a record
  is never half-written.

  A checkpoint passes only the keys it writes: 4 (meta, state, messages, events), 7 when it records calls
  in the ledger or refers to results, 8 at the run's end.

  KEYS[1] run meta (hash)
  KEYS[2] run state (string)
  KEYS[3] run messages (list)
  KEYS[4] run events (stream)
  KEYS[5] run results (hash)            (7 or 8 keys)
  KEYS[6] run approvals (hash)          (7 or 8 keys)
  KEYS[7] run call ledger (hash)        (7 or 8 keys)
  KEYS[8] run call starts (hash)        (8 keys)

  ARGV epoch, seq, base, rewrite ('1': the messages are rewritten; '2': counted with LLEN; '0'), state (a base, '\n' and a delta, or ''), n, messages…,
       n, (call id, SHA-1 of the results-hash entry a message refers to)…, persist ('1': the results hash
       loses its TTL), n, events…, n, meta fields…, n,
       (call id, entry)…, ledger TTL ('' when the ledger has its TTL), final ('1' or '0'), retention TTL in s,
       approvals ('1' when people decided calls of the run: its hash is kept as long as the record, else
       it keeps the TTL each decision set), n, (index in the history, call id, the message up to its
       entry)… of the tool messages that refer to results (at the run's end each takes its entry in, and
       the entry leaves the hash), then on the run's end the call ids whose results-hash entries the final
       record holds elsewhere (each call's tool message and step)

  Returns { verdict, cancel }: verdict is ok | dup | fenced | final | gap | refs.
]]
local cur = redis.call('HMGET', KEYS[1], 'epoch', 'seq', 'final', 'cancel_requested', 'msgs')
local cancel = cur[4] or ''
if cur[1] ~= ARGV[1] then return { 'fenced', cancel } end
local stored = tonumber(cur[2] or '0')
local seq = tonumber(ARGV[2])
if seq <= stored then return { 'dup', cancel } end
if cur[3] == '1' then return { 'final', cancel } end
if seq ~= stored + 1 then return { 'gap', cancel } end
local base = tonumber(ARGV[3])
if ARGV[4] ~= '1' then
  local count = tonumber(ARGV[4] == '0' and cur[5] or redis.call('LLEN', KEYS[3]))
  if count ~= base then return { 'gap', cancel } end
end
local i = 6
local n = tonumber(ARGV[i]); i = i + 1
local messages = i
i = i + n
-- A tool message stored as a reference to its call's results-hash entry is written only when the entry
-- is the result the step expected (its SHA-1): else nothing is written and the caller sends it whole.
local refs = tonumber(ARGV[i]); i = i + 1
for j = i, i + refs - 1, 2 do
  local entry = redis.call('HGET', KEYS[5], ARGV[j])
  if not entry or redis.sha1hex(entry) ~= ARGV[j + 1] then return { 'refs', cancel } end
end
i = i + refs
-- A history that refers to results keeps them while the run lives: the results hash has no TTL from the
-- first checkpoint that refers to it, and from a parking one (a call's record gives it a TTL again).
if ARGV[i] == '1' then redis.call('PERSIST', KEYS[5]) end
i = i + 1
if ARGV[4] == '1' then redis.call('DEL', KEYS[3]) end
for j = messages, messages + n - 1, 200 do
  redis.call('RPUSH', KEYS[3], unpack(ARGV, j, math.min(j + 199, messages + n - 1)))
end
local count = base + n
-- The state: a base replaces the record, a delta line (starting with a line feed) is appended to it, and
-- nothing is written when nothing changed (see protocol's state-record.ts).
if string.sub(ARGV[5], 1, 1) == '\n' then redis.call('APPEND', KEYS[2], ARGV[5])
elseif ARGV[5] ~= '' then redis.call('SET', KEYS[2], ARGV[5]) end
n = tonumber(ARGV[i]); i = i + 1
for j = i, i + n - 1 do redis.call('XADD', KEYS[4], '*', 'e', ARGV[j]) end
i = i + n
n = tonumber(ARGV[i]); i = i + 1
local meta, metaN = i, n
i = i + n
local calls = tonumber(ARGV[i])
local callsAt = i + 1
i = callsAt + calls
local final = ARGV[i + 1] == '1'
local ttl = tonumber(ARGV[i + 2])
if final then
  redis.call('HSET', KEYS[1], 'seq', seq, 'msgs', count, 'final', '1', unpack(ARGV, meta, meta + metaN - 1))
else
  redis.call('HSET', KEYS[1], 'seq', seq, 'msgs', count, unpack(ARGV, meta, meta + metaN - 1))
end
for j = callsAt, callsAt + calls - 1, 2 do redis.call('HSETNX', KEYS[7], ARGV[j], ARGV[j + 1]) end
if calls > 0 and ARGV[i] ~= '' then redis.call('EXPIRE', KEYS[7], ARGV[i]) end
if final then
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
  -- A finished history takes in the results its tool messages refer to (a list holds them more compactly
  -- than a hash of long values): each reference becomes the message with its entry whole, as readers read
  -- either form.
  local embeds = tonumber(ARGV[i + 4])
  for j = i + 5, i + 4 + embeds, 3 do
    local entry = redis.call('HGET', KEYS[5], ARGV[j + 1])
    if entry then redis.call('LSET', KEYS[3], tonumber(ARGV[j]), ARGV[j + 2] .. entry .. '}') end
  end
  -- The results hash repeats each answered call's tool message (the step keeps the executor's tries and
  -- id): its entries go, but for calls whose message compaction folded away. Emptied, the hash is gone.
  local ids = i + 5 + embeds
  for j = ids, #ARGV, 200 do redis.call('HDEL', KEYS[5], unpack(ARGV, j, math.min(j + 199, #ARGV))) end
  for k = 1, 5 do redis.call('EXPIRE', KEYS[k], ttl) end
  if ARGV[i + 3] == '1' then redis.call('EXPIRE', KEYS[6], ttl) end
end
return { 'ok', cancel }
