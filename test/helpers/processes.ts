import path from 'node:path';
import { ROOT, startChild, type Child } from '@agent-reach/faults/processes';

// The child-process kit is the fault harness's (packages/faults): the tests start processes the same way.
export {
  ROOT,
  startChild,
  startSchedulerChild,
  startExecutorWith,
  startArchiverChild,
  type Child,
} from '@agent-reach/faults/processes';
export const TEST_TOOLS = path.join(ROOT, 'test/helpers/test-tools.ts');
export const TEST_AGENTS = path.join(ROOT, 'test/fixtures/agents.yaml');

/** Starts an executor process serving the test tools under the given key prefix. */
export function startExecutorChild(prefix: string, env: Record<string, string> = {}): Child {
  return startChild('packages/executor/src/main.ts', {
    AR_KEY_PREFIX: prefix,
    AGENTS_FILE: TEST_AGENTS,
    TOOL_MODULES: TEST_TOOLS,
    EXECUTOR_METRICS_PORT: '0',
    OUTPUTS_DIR: path.join(ROOT, 'outputs', 'test'),
    ...env,
  });
}

/** Waits until every child runs under configuration `version` (its own /metrics says so). */
export async function atConfigVersion(children: Child[], version: number): Promise<void> {
  for (const child of children) {
    const port = String((await child.ready).metricsPort);
    const end = Date.now() + 15_000;
    for (;;) {
      const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
      if (/^agent_reach_config_version (\d+)$/m.exec(text)?.[1] === String(version)) break;
      if (Date.now() > end) throw new Error(`config version ${version} not reached on port ${port}`);
      await new Promise((r) => setTimeout(r, 25));
    }
  }
}
