/**
 * The handoff demo: a customer's conversation with config/handoff/agents.yaml through the HTTP API, in one
 * session. The first message goes to `triage`, which hands it to `order_desk` (`transfer_to_order_desk`);
 * the second names no agent, so the session goes on with the agent that last answered. Without a model
 * configured, llm-sim plays every agent (scenario `handoff-desk`, bundled with llm-sim), so it runs
 * offline.
 */
import { createClient, type StreamedEvent } from '@agent-reach/client';
import { exitWith, startDemoStack } from './demo-stack.js';

const AGENTS_FILE = 'config/handoff/agents.yaml';
const MESSAGES = [
  process.argv[2] ?? 'I was charged twice for order ORD-123456. Where is it now?',
  process.argv[3] ?? 'And what happened to it so far?',
];

async function main(): Promise<number> {
  const offline = !process.env.OPENAI_API_KEY && !process.env.OPENAI_BASE_URL;
  const stack = await startDemoStack({
    ...process.env,
    AGENTS_FILE: process.env.AGENTS_FILE ?? AGENTS_FILE,
    ...(offline ? { OPENAI_MODEL: 'handoff-desk' } : {}),
  });
  if (!stack) return 1;
  const client = createClient({ baseUrl: stack.apiUrl, apiKey: stack.apiKey });
  const { session_id: sessionId } = await client.createSession();
  console.log(`Session ${sessionId} (POST /v1/sessions/${sessionId}/messages)\n`);
  let failed = false;
  for (const [i, input] of MESSAGES.entries()) {
    // The first message names the session's agent; the next names none and goes on with the last one.
    const run = await client.sendMessage(sessionId, { ...(i === 0 ? { agent: 'triage' } : {}), input });
    console.log(`Customer${i === 0 ? ' → triage' : ''}: ${input}`);
    let agent = 'triage';
    for await (const event of client.streamEvents(run.run_id)) agent = print(event, agent);
    const done = await client.getRun(run.run_id);
    if (done.status !== 'succeeded') {
      console.log(`  (the run ended ${done.status}: ${done.reason})`);
      failed = true;
      break;
    }
    console.log(`${agent}: ${done.answer ?? ''}\n`);
  }
  console.log(`See it in the inspector: ${stack.apiUrl}/ui (runs of agent triage)`);
  await stack.close();
  return failed ? 2 : 0;
}

/** Prints what the customer would not see (handoffs, calls); returns the agent in charge after it. */
function print({ data }: StreamedEvent, agent: string): string {
  const e = data;
  switch (e.type) {
    case 'run_started':
      if (e.in_charge)
        console.log(`  (the session goes on with ${e.in_charge}, the agent that last answered)`);
      return e.in_charge ?? e.agent;
    case 'handoff':
      console.log(
        `  ${e.from} hands the conversation to ${e.to} (kept ${e.filter === 'all' ? 'all of it' : e.filter})`,
      );
      return e.to;
    case 'tool_result':
      if (!e.tool.startsWith('transfer_to_'))
        console.log(
          `  ${agent} calls ${e.tool}(${e.arguments}) → ${e.ok ? 'ok' : (e.error?.kind ?? 'error')}`,
        );
      return agent;
    default:
      return agent;
  }
}

exitWith(main());
