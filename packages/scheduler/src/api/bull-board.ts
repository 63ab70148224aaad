import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { FastifyAdapter } from '@bull-board/fastify';
import { Queue } from 'bullmq';
import type { FastifyInstance } from 'fastify';
import { BOARD_QUEUES_REFRESH_MS } from './constants.js';
import type { ApiContext } from './options.js';

export const BOARD_PATH = '/admin/queues';

/**
 * Bull Board at `/admin/queues`: the `agent-runs` queue and one queue per tool group of the catalog
 * (re-read at most every 10 s, so groups of executors started later appear). Read-only unless told
 * otherwise: retrying a run job by hand would bypass the run's own recovery. Authentication is the API's
 * (Bearer, or Basic with the key as password, for browsers); see `auth.ts`.
 */
export async function registerBoard(app: FastifyInstance, ctx: ApiContext): Promise<void> {
  const { control, runner, redis, keys } = ctx.deps;
  const readOnlyMode = ctx.options.boardReadOnly;
  const toolQueues = new Map<string, Queue>();
  const adapters = () => [
    new BullMQAdapter(control.queue, { readOnlyMode }),
    ...[...toolQueues.values()].map((q) => new BullMQAdapter(q, { readOnlyMode })),
  ];
  const serverAdapter = new FastifyAdapter();
  serverAdapter.setBasePath(BOARD_PATH);
  const board = createBullBoard({
    queues: adapters(),
    serverAdapter,
    options: { uiConfig: { boardTitle: 'Agent-Reach' } },
  });

  let syncedAt = 0;
  const sync = async () => {
    if (Date.now() - syncedAt < BOARD_QUEUES_REFRESH_MS) return;
    syncedAt = Date.now();
    await runner.catalog.refresh();
    let added = false;
    for (const group of new Set(runner.catalog.names().map((n) => runner.catalog.group(n)))) {
      if (toolQueues.has(group)) continue;
      const name = keys.toolQueue(group);
      toolQueues.set(group, new Queue(name, { connection: redis, prefix: keys.queuePrefix(name) }));
      added = true;
    }
    if (added) board.replaceQueues(adapters());
  };

  await app.register(async (scope) => {
    // After authentication (onRequest), so that anonymous requests cost no Redis reads.
    scope.addHook('preHandler', async () => {
      await sync().catch((err: unknown) => ctx.log.warn({ err }, 'board: cannot read the tool catalog'));
    });
    await scope.register(serverAdapter.registerPlugin(), { prefix: BOARD_PATH });
  });
  app.addHook('onClose', async () => {
    await Promise.all([...toolQueues.values()].map((q) => q.close()));
  });
}
