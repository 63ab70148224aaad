--[[
  An executor checks a tool job against its run's record and, when every check passes, records that it
  starts the call: one round trip, and nothing is written for a job that is refused. The checks, in order:
  - the run exists and its status is a live one (`ARGV[7..]`; a final or unknown status refuses the job);
  - the run belongs to the job's agent (its agent in charge, `inCharge`, once it handed off);
  - the run's ledger holds this exact call (same agent, tool name and arguments digest);
  - for a tool that requires confirmation, a recorded decision on the call is an approval (the job's own
    fields are never trusted; no decision at all is not a refusal: the call is answered
    `awaiting_confirmation` without running).
  For a tool that requires a grant, a person's approval of this call's grant request (a recorded decision
  with `grant: true`) is reported as `granted`: the call runs as granted before the run's next checkpoint
  writes the grant to its record. Any other decision grants nothing (the grant check refuses the call).
  Whether any decision on the call is recorded is reported as `decided`: a call of such a tool that no
  person has decided on may still be waiting for one, and a refusal of it is then not its result.
  Then a call with a recorded result is not started (its result is the only one). Otherwise, when asked
  to (`ARGV[5]` not empty: the call's deadline has not passed), the start is recorded, unless the
  dispatcher withdrew this publication of the call (or a later one) because nobody had started it by its
  deadline: a job taken from a queue the dispatcher gave up on never runs. From then on the call counts as
  started, and its dispatcher waits for its result instead of publishing it again. The start is a field of
  the run's ledger (`<call id>:start`: the ledger has its TTL from the checkpoint that wrote the call, so
  the start costs no TTL of its own, and one read gets the call and its start). Every key is the run's
  (one slot in a cluster).

  KEYS[1] run meta (hash)
  KEYS[2] run call ledger (hash): call id → entry; `<call id>:start` → `started:<publication>:<executor>` |
          `withdrawn:<publication>`
  KEYS[3] run approvals (hash)
  KEYS[4] run results (hash)

  ARGV[1] tool call id
  ARGV[2] the job's agent
  ARGV[3] the ledger entry the job's call has (JSON: agent, name, args_sha256), as the checkpoint writes it
  ARGV[4] two flags: the first '1' when the tool requires confirmation, the second '1' when it requires a grant
  ARGV[5] the job's publication (its `enqueued_at`, epoch ms), or '' to check without starting
  ARGV[6] executor id
  ARGV[7..] the live run statuses

  Returns { verdict, detail, session id, grants, approved ('1' | '0'), granted ('1' | '0'), decided ('1' |
  '0': a decision on the call is recorded; looked up only for tools that require confirmation or a grant) },
  where verdict is one of
  run_not_found | run_final (detail: the status) | wrong_agent | not_in_ledger | not_approved (refused),
  recorded (detail: the recorded result JSON) | withdrawn | started | checked (not asked to start).
  Session id and grants (comma-separated tool names) are read with the rest of the record.
]]
local meta = redis.call('HMGET', KEYS[1], 'status', 'agent', 'sessionId', 'grants', 'inCharge')
local status = meta[1]
if not status then return { 'run_not_found', false, false, false, '0' } end
local live = false
for i = 7, #ARGV do
  if ARGV[i] == status then live = true break end
end
if not live then return { 'run_final', status, false, false, '0' } end
if (meta[5] or meta[2]) ~= ARGV[2] then return { 'wrong_agent', false, false, false, '0' } end
local call = redis.call('HMGET', KEYS[2], ARGV[1], ARGV[1] .. ':start')
local ledger, current = call[1], call[2]
if not ledger then return { 'not_in_ledger', false, false, false, '0' } end
-- The checkpoint writes the entry as the job's fields give it, so the strings are equal; an entry written
-- otherwise (another release, another key order) is compared field by field.
if ledger ~= ARGV[3] then
  local ok, entry = pcall(cjson.decode, ledger)
  local want = cjson.decode(ARGV[3])
  if not ok or type(entry) ~= 'table' or entry.agent ~= want.agent or entry.name ~= want.name
    or entry.args_sha256 ~= want.args_sha256 then
    return { 'not_in_ledger', false, false, false, '0' }
  end
end
local approved, granted, decided = '0', '0', '0'
local confirm, grant = string.sub(ARGV[4], 1, 1) == '1', string.sub(ARGV[4], 2, 2) == '1'
if confirm or grant then
  local decision = redis.call('HGET', KEYS[3], ARGV[1])
  if decision then
    decided = '1'
    local ok, d = pcall(cjson.decode, decision)
    local yes = ok and type(d) == 'table' and d.decision == 'approved'
    if confirm then
      if not yes then return { 'not_approved', false, false, false, '0' } end
      approved = '1'
    end
    if grant and yes and d.grant == true then granted = '1' end
  end
end
local session, grants = meta[3] or false, meta[4] or false
local recorded = redis.call('HGET', KEYS[4], ARGV[1])
if recorded then return { 'recorded', recorded, session, grants, approved, granted, decided } end
if ARGV[5] == '' then return { 'checked', false, session, grants, approved, granted, decided } end
if current then
  local withdrawn = tonumber(string.match(current, '^withdrawn:(%d+)$') or '')
  if withdrawn and withdrawn >= tonumber(ARGV[5]) then return { 'withdrawn', false, session, grants, approved, granted, decided } end
end
redis.call('HSET', KEYS[2], ARGV[1] .. ':start', 'started:' .. ARGV[5] .. ':' .. ARGV[6])
return { 'started', false, session, grants, approved, granted, decided }
