import { parseArgs } from 'node:util';
import { BUNDLED_SCENARIOS_DIR, DEFAULT_CLI_PORT, DEFAULT_HOST, NOISY_MODEL } from './constants.js';
import { loadScenarios } from './load-scenarios.js';
import { startLlmSim } from './server.js';

const USAGE = `llm-sim: an OpenAI-compatible chat-completions simulator that plays scripted scenarios.

Usage: tsx packages/llm-sim/src/main.ts [--port N] [--host H] [--scenarios DIR] [--record FILE]

  --port N          port to listen on (default ${DEFAULT_CLI_PORT}; 0 picks a free port)
  --host H          host to bind (default ${DEFAULT_HOST})
  --scenarios DIR   folder of *.yaml / *.yml / *.json scenarios (default: the package's scenarios/)
  --record FILE     append every chat request and its answer to FILE, one JSON object a line
  -h, --help        show this help

Point an OpenAI client at the printed URL and use a scenario name as the model
(or send the header x-llm-sim-scenario: NAME), or sim-noisy / sim-noisy-<seed> for the noisy model.`;

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      port: { type: 'string', default: String(DEFAULT_CLI_PORT) },
      host: { type: 'string', default: DEFAULT_HOST },
      scenarios: { type: 'string', default: BUNDLED_SCENARIOS_DIR },
      record: { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false },
    },
    strict: true,
  });
  if (values.help) {
    console.log(USAGE);
    return;
  }
  const port = Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    throw new Error(`--port must be an integer between 0 and 65535 (got '${values.port}')`);
  }
  const scenarios = loadScenarios(values.scenarios);
  const sim = await startLlmSim({
    port,
    host: values.host,
    scenarios,
    ...(values.record !== undefined ? { recordFile: values.record } : {}),
  });
  console.log(`llm-sim listening on ${sim.url}`);
  console.log(`scenarios: ${scenarios.map((s) => s.name).join(', ') || '(none)'}`);
  console.log(`noisy model: ${NOISY_MODEL}, ${NOISY_MODEL}-<seed>`);

  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    console.log(`llm-sim: ${signal} received, closing`);
    sim.close().then(
      () => process.exit(0),
      (err: unknown) => {
        console.error('llm-sim: close failed', err);
        process.exit(1);
      },
    );
  };
  process.once('SIGINT', () => stop('SIGINT'));
  process.once('SIGTERM', () => stop('SIGTERM'));
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
