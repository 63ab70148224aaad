--[[
  Admits a run into its tenant's quota: refused when the tenant has used its tokens of the day or has
  its limit of runs in flight; else the run joins the tenant's set of runs in flight. A run already in
  the set is admitted again (a repeated request). Both keys carry the tenant's hash tag.

  KEYS[1] the tenant's runs in flight (sorted set: run id → epoch ms admitted)
  KEYS[2] the tenant's tokens used today (string: an integer)

  ARGV[1] the run id ('' checks without admitting)
  ARGV[2] now, epoch ms
  ARGV[3] the most runs in flight (0: no limit)
  ARGV[4] the most tokens a day (0: no limit)

  Returns { verdict ('ok' | 'runs' | 'tokens'), runs in flight, tokens used today }.
]]
local inFlight = redis.call('ZCARD', KEYS[1])
local used = tonumber(redis.call('GET', KEYS[2]) or '0') or 0
if ARGV[1] ~= '' and redis.call('ZSCORE', KEYS[1], ARGV[1]) then return { 'ok', inFlight, used } end
local maxRuns = tonumber(ARGV[3])
local maxTokens = tonumber(ARGV[4])
if maxTokens > 0 and used >= maxTokens then return { 'tokens', inFlight, used } end
if maxRuns > 0 and inFlight >= maxRuns then return { 'runs', inFlight, used } end
if ARGV[1] ~= '' then
  redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1])
  inFlight = inFlight + 1
end
return { 'ok', inFlight, used }
