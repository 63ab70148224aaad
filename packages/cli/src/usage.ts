/** What `agent-reach --help` prints. */
export const USAGE = `agent-reach — queue-driven tool execution for LLM agents

Usage: agent-reach <command> [options]

Processes
  dev [--agents FILE] [--tools a.js,b.js] [--groups a,b] [--scenarios DIR] [--port N] [--sim-port N]
      [--executor-metrics-port N] [--scheduler-metrics-port N]
                                     all in one: executor + scheduler + HTTP API (+ llm-sim when no
                                     model is configured), on the local Redis
  scheduler [--concurrency N]        run agent runs from the agent-runs queue
  executor [--groups a,b] [--tools m.js] [--concurrency N]
                                     run tool calls from the tool queues
  llm-sim [--port N] [--host H] [--scenarios DIR] [--record FILE]
                                     the OpenAI-compatible simulator
  archiver                           move finished runs from Redis to PostgreSQL (needs DATABASE_URL)

Runs
  run "<task>" --agent A [--follow] [--model M] [--session S] [--output-schema FILE]
                                     start a run (and follow its progress)
  runs ls [--agent A] [--status S] [--since T] [--until T] [--metadata K=V] [--trace ID]
          [--tool NAME] [--error-kind KIND] [--cursor C] [--limit N] [--json]
  runs show <run-id>                 the run as a readable timeline, its outcome, its callback deliveries
  runs events <run-id>               the run's raw events, one JSON object per line
  runs replay <run-id> [--live [--force]]
                                     re-run with the recorded model turns; tool calls are answered
                                     from the recording, or with --live re-executed when their tool
                                     is read-only or idempotent (--force: any tool). Confirmation
                                     tools never run: they are reported as needing a new approval
  approve <run-id> <tool-call-id> [--by NAME] [--reason TEXT]
  reject <run-id> <tool-call-id> [--by NAME] [--reason TEXT]
  cancel <run-id>

Workflows
  workflows start <workflow> "<request>" [--wait]   start a workflow of the workflows file
  workflows ls [--workflow W] [--status S] [--limit N] [--json]
  workflows show <workflow-id> [--json]
                                     each node's state and run, the output, the watchdog's report,
                                     the callback deliveries (--json: the API's GET
                                     /v1/workflows/{id} document)
  workflows events <workflow-id>     the workflow's raw events, one JSON object per line
  workflows cancel <workflow-id>     cancel it and its running node runs

Schedules
  schedules create (--agent A | --workflow W) --input TEXT (--cron EXPR [--timezone ZONE] | --every MS)
                                     runs of an agent (or workflows) on a cron expression or an interval
  schedules ls | show <id>           schedules with their next and last firings
  schedules pause|resume|trigger|delete <id>

Evals
  eval DATASET [--variant NAME=OVERRIDES ...] [--repeat N] [--concurrency N] [--format F] [--out FILE]
       [--fail-under METRIC=X] [--max-regression METRIC=X] [--no-upload]
                                     run a dataset's cases on the fleet over the HTTP API, per variant;
                                     report reach metrics and differences with their intervals
                                     (its own exit codes: agent-reach eval --help, docs/evals.md)
  eval --from-runs FILTER [--out F]  a dataset of recorded runs whose expectations are their tool paths

Configuration
  config check [--probe]             validate the config, the tool registry, the agents file and
                                     the workflows file and each OpenAPI document in a file;
                                     print each agent's reachable tools; --probe: start each MCP
                                     server and check names against its tools, read OpenAPI URLs
  config apply FILE [--workflows W]  validate an agents file (and workflows) and publish them to
                                     every running scheduler and executor as the next version
  config show [VERSION]              print the published configuration (or an earlier version)
  config history [--json]            the versions published, newest first: digest, time, by whom
  config rollback VERSION [--by N]   publish an earlier version again as the next version
  mcp                                the MCP servers as the executors run them (state, since,
                                     restarts, tools, errors) and each agent's MCP tools, served or not

Every command reads REDIS_URL, AR_KEY_PREFIX and the rest of the environment (see the README).
T is an ISO date or epoch milliseconds. Add --help to a command for its options.

Exit codes: 0 success; 1 failure (Redis unreachable, bad configuration, a replay that failed);
2 bad usage; 3 run, call or workflow not found; 4 config check found problems or config apply refused
the file; 5 a followed run (or a waited workflow) ended without succeeding.`;

const COMMANDS = {
  dev: `Usage: agent-reach dev [options]

Executor + scheduler + HTTP API in one process on the local Redis, and llm-sim playing the model
when neither OPENAI_API_KEY nor OPENAI_BASE_URL is set. Flags win over the environment.

  --agents FILE                 agents and their reachable tools (env AGENTS_FILE)
  --tools a.js,b.js             extra tool modules for the executor (env TOOL_MODULES)
  --groups a,b                  tool groups the executor serves (env EXECUTOR_GROUPS)
  --scenarios DIR               llm-sim's scenarios (default: the ones llm-sim ships)
  --port N                      the HTTP API's port (env API_PORT, default 8080)
  --sim-port N                  llm-sim's port (env LLM_SIM_PORT, default a free port)
  --executor-metrics-port N     the executor's /metrics (env EXECUTOR_METRICS_PORT, default a free port)
  --scheduler-metrics-port N    the scheduler's /metrics (env SCHEDULER_METRICS_PORT, default a free port)`,
  run: `Usage: agent-reach run "<task>" --agent A [--follow] [--model M] [--session S] [--output-schema FILE]

  -a, --agent A     the agent that runs the task (required)
  -f, --follow      print the run's progress (and its answer as it streams) until it finishes;
                    exit 5 when it did not succeed
  --model M         a model other than the scheduler's default
  --session S       continue this session's history
  --output-schema FILE
                    a JSON Schema (a JSON file) the answer must match, instead of the agent's
                    output_schema; the run's output is then printed as JSON`,
  runs: `Usage: agent-reach runs <ls|show|events|replay> [options]

  runs ls [--agent A] [--status S] [--since T] [--until T] [--metadata K=V] [--trace ID]
          [--tool NAME] [--error-kind KIND] [--cursor C] [--limit N] [--json]
                                     runs, newest first (--limit default 50); T is an ISO date or
                                     epoch milliseconds; --json prints one object per line
  runs show <run-id>                 the run as a readable timeline, its outcome, its callback deliveries
  runs events <run-id>               the run's raw events, one JSON object per line
  runs replay <run-id> [--live [--force]]
                                     re-run with the recorded model turns; tool calls are answered
                                     from the recording, or with --live re-executed when their tool
                                     is read-only or idempotent (--force: any tool). Confirmation
                                     tools never run: they are reported as needing a new approval`,
  approve: `Usage: agent-reach approve <run-id> <tool-call-id> [--by NAME] [--reason TEXT]`,
  reject: `Usage: agent-reach reject <run-id> <tool-call-id> [--by NAME] [--reason TEXT]`,
  cancel: `Usage: agent-reach cancel <run-id>`,
  mcp: `Usage: agent-reach mcp

Prints each MCP server of the configuration in force as the live executors run it: starting, up or
down, since when, tools mounted, restarts, tools hidden for a changed digest, a change of its command
that could not start (the server as it was keeps serving), and the server's own error; then each
agent's MCP tools, served now or not, and why.`,
  config: `Usage: agent-reach config check [--probe] | config apply FILE [--workflows FILE] [--providers FILE] [--by NAME]
       | config show [VERSION] | config history [--json] | config rollback VERSION [--by NAME]

check  validates the configuration (the environment), the tool registry, the agents file, the
       providers file (every agent's model and fallback declared) and the workflows file (unknown
       agents and dependencies, cycles named in order), and prints each
       agent's reachable tools and each workflow's nodes. Each OpenAPI document in a file is read
       and validated, and its source's operations looked up in it (did-you-mean the document's
       operation). Exit 4 when it finds problems.
       --probe also starts (or connects to) each MCP server, lists its tools and checks the agents
       file's tool names, allow/deny and per-tool settings against them (did-you-mean the real name),
       and reads the OpenAPI documents at http(s) URLs.
apply  validates FILE (agents, budgets, tool_groups) against the tools of the live executors, and
       the workflows against its agents, and publishes both to Redis as the fleet's next
       configuration version: every scheduler and executor takes it within seconds, without a
       restart. The workflows: --workflows FILE; else a "workflows" key of FILE itself; else the
       ones in force are kept (the published version's, or the local workflows file while no
       published version has any). "workflows: []" removes them all. The model providers and prices
       (docs/providers.md): --providers FILE; else a "providers" key of FILE itself; else the
       version in force's; else the local providers file (PROVIDERS_FILE, or providers.yaml beside
       the agents file). Every agent's model and fallback is checked against them. Anything wrong
       (a cycle, an unknown agent, tool or model) refuses the whole apply, every problem listed, and
       the version in force stays (exit 4).
show   prints the published version (or VERSION, from the history), when and how it was applied,
       and its document (its first line as before, the document JSON after it).
history  lists the versions published (the last 100), newest first: version, digest, time, who
       applied it (--by NAME, else AGENT_REACH_OPERATOR, else user@host) and how.
rollback  publishes VERSION's document again as the next version, checked as an apply is (its tools
       against the live executors, its workflows against its agents); refused (exit 4), the version
       in force stays. Applying needs only Redis access.`,
  workflows: `Usage: agent-reach workflows <start|ls|show|events|cancel> [options]

  workflows start <workflow> "<request>" [--wait]
                                     start a workflow of the configuration in force (the published
                                     version's, else WORKFLOWS_FILE, default workflows.yaml beside
                                     the agents file; exit 3 when it declares none of that name);
                                     --wait: until it ends, then show it (exit 5 when it did not
                                     succeed)
  workflows ls [--workflow W] [--status S] [--limit N] [--json]
                                     workflows, newest first (--limit default 50)
  workflows show <workflow-id> [--json]
                                     each node's state and run, the output, the watchdog's report,
                                     the callback deliveries (--json: the API's GET
                                     /v1/workflows/{id} document)
  workflows events <workflow-id>     the workflow's raw events, one JSON object per line
  workflows cancel <workflow-id>     cancel it and its running node runs`,
} as const;

/** The usage of one command. */
export function usageOf(command: keyof typeof COMMANDS): string {
  return COMMANDS[command];
}
