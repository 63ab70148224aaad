import { connect } from 'node:net';
import { createKeys, type RunCallback } from '@agent-reach/protocol';
import type { Redis } from 'ioredis';
import type { FaultArchive } from './archive-check.js';
import { callbackReceiverKilled } from './callback-check.js';
import { scheduleSchedulerKilled } from './schedule-check.js';
import { runInput, type Invariant } from './fault-check.js';
import type { Fleet } from './fleet.js';
import type { PrivatePostgres } from './private-postgres.js';
import type { PrivateRedis } from './private-redis.js';
import { poll, sleep } from './util.js';
import { SHUTDOWN_GRACE_MS, SHUTDOWN_SLACK_MS } from './workload.js';

/** What an injected fault can use and report. */
export interface FaultContext {
  fleet: Fleet;
  /** The private Redis, unless the scenario runs on a cluster. */
  redis: PrivateRedis | undefined;
  /** The Redis Cluster the scenario runs on (`FaultRunOptions.cluster`), if any. */
  cluster: ClusterTarget | undefined;
  /** The fleet's archive database, when the scenario runs with the archive on. */
  archive: FaultArchive | undefined;
  /** The archive's own PostgreSQL server, when the scenario asked for one (`privatePostgres`). */
  postgres: PrivatePostgres | undefined;
  /** The key of the outbox of the run archive (`<prefix>:{archive}:outbox`). */
  outboxKey: string;
  /**
   * A connection of its own to the private Redis (to the first node of a cluster), for admin commands
   * (CLIENT PAUSE, CONFIG SET, …).
   */
  admin: Redis;
  /** Tool executions started so far (from the starts file, independent of Redis). */
  progress(): number;
  /** Waits until `more` further executions have started; false if that did not happen in `timeoutMs`. */
  waitProgress(more: number, timeoutMs: number): Promise<boolean>;
  note(name: string, value: string | number): void;
  violation(invariant: Invariant, subject: string, detail: string): void;
  /** What the scenario's `attach` started, if it has one. */
  attachment: ScenarioAttachment | undefined;
}

/**
 * What a scenario starts beside the fleet (`FaultScenario.attach`): a process of its own, the fleet's
 * settings it needs, what each run asks for, and the scenario's own invariants, checked once every run
 * ended.
 */
export interface ScenarioAttachment {
  /** Settings of the fleet's processes on top of `FAULT_ENV`. */
  env?: Record<string, string>;
  /** The callback each run asks for. */
  callback?(runId: string): RunCallback;
  /** The fault, when it acts on what the attachment started. */
  inject?(ctx: FaultContext): Promise<void>;
  /** Checks the scenario's own invariants once every run ended (`ended`: the runs with a final status). */
  check?(ctx: {
    ended: readonly string[];
    note(name: string, value: string | number): void;
    violation(invariant: Invariant, subject: string, detail: string): void;
  }): Promise<void>;
  /** Stops what it started (the harness's teardown). */
  close(): Promise<void>;
}

export interface FaultScenario {
  /** Short id (`pnpm faults --scenario <id>`). */
  id: string;
  /** What is done, as the end of a sentence ("… when <title>"). */
  title: string;
  /** Fraction of the workload's tool calls started before the fault is injected. */
  at?: number;
  /** The fault is the archive's: the scenario always runs with the archive on. */
  archive?: boolean;
  /** The archive on a PostgreSQL server of the scenario's own (initdb), which it may stop and start. */
  privatePostgres?: boolean;
  /** The input of the i-th run, instead of `runInput(runId)` (which it must start with). */
  input?(runId: string, i: number): string;
  /** Starts what the scenario needs beside the fleet, before the fleet starts (`work`: its directory). */
  attach?(work: string): Promise<ScenarioAttachment>;
  inject(ctx: FaultContext): Promise<void>;
}

/** A Redis Cluster a scenario can run on (its nodes are the caller's to manage). */
export interface ClusterTarget {
  /** Comma-separated seed nodes, as `REDIS_URL`. */
  readonly url: string;
}

/** Redis at `maxmemory` (noeviction, 100 KiB above what it used) for `ms`, then with room again. */
export function outOfMemory(ms: number): FaultScenario {
  return {
    id: 'redis-out-of-memory',
    title: `Redis reaches maxmemory (noeviction) for ${ms / 1000} s and then has room again`,
    async inject({ admin, note }) {
      const used = Number(/used_memory:(\d+)/.exec(await admin.info('memory'))?.[1]);
      await admin.config('SET', 'maxmemory-policy', 'noeviction');
      await admin.config('SET', 'maxmemory', String(used + 100 * 1024));
      await sleep(ms);
      await admin.config('SET', 'maxmemory', '0');
      const oom = /errorstat_OOM:count=(\d+)/.exec(await admin.info('errorstats'))?.[1] ?? '0';
      note('commands refused with OOM', Number(oom));
    },
  };
}

export const SCENARIOS: readonly FaultScenario[] = [
  {
    id: 'scheduler-paused',
    title: 'a scheduler is paused (SIGSTOP) for 8 s, past its 4 s run lock, and then resumed',
    async inject({ fleet }) {
      fleet.signal('scheduler', 0, 'SIGSTOP');
      await sleep(8000);
      fleet.signal('scheduler', 0, 'SIGCONT');
    },
  },
  {
    id: 'redis-killed',
    title: 'Redis is killed (kill -9) mid-load and restarted from its AOF on the same port 4 s later',
    async inject({ redis }) {
      if (!redis) throw new Error('this scenario needs a single private Redis');
      await redis.kill9();
      await sleep(4000);
      await redis.restart();
    },
  },
  {
    id: 'redis-paused',
    title: 'Redis pauses every client (CLIENT PAUSE 3000 ALL) and later sleeps (DEBUG SLEEP 2) mid-load',
    async inject({ admin, waitProgress, note }) {
      await admin.call('CLIENT', 'PAUSE', '3000', 'ALL');
      await sleep(3000);
      if (await waitProgress(20, 20_000)) await admin.call('DEBUG', 'SLEEP', '2');
      else note('DEBUG SLEEP', 'skipped: no progress within 20 s after the pause');
    },
  },
  outOfMemory(8000),
  {
    id: 'fleet-sigterm',
    title: 'every scheduler and executor gets SIGTERM mid-load and the whole fleet is started again',
    at: 0.3,
    async inject({ fleet, note, violation }) {
      const bound = SHUTDOWN_GRACE_MS + SHUTDOWN_SLACK_MS;
      const exits = await fleet.terminateAll(bound + 5000);
      for (const e of exits) {
        note(
          `exit after SIGTERM: ${e.name}`,
          e.killed ? `still running after ${e.ms} ms, killed` : `${e.ms} ms, exit code ${e.code}`,
        );
        if (e.killed)
          violation(
            'unclean_shutdown',
            e.name,
            `did not exit within ${e.ms} ms (grace ${SHUTDOWN_GRACE_MS} ms)`,
          );
        else if (e.ms > bound)
          violation('unclean_shutdown', e.name, `exited after ${e.ms} ms (grace ${SHUTDOWN_GRACE_MS} ms)`);
        else if (e.code !== 0)
          violation('unclean_shutdown', e.name, `exited with code ${e.code}: ${e.error}`);
      }
      await fleet.start();
    },
  },
  {
    id: 'previous-format-takeover',
    title:
      'the schedulers write records as the release before deltas did (CHECKPOINT_FORMAT=whole) and are ' +
      'killed (kill -9) mid-load one after the other, replaced by schedulers of this format that take their runs over',
    async attach() {
      return { env: { CHECKPOINT_FORMAT: 'whole' }, close: async () => undefined };
    },
    async inject({ fleet }) {
      fleet.setEnv({ CHECKPOINT_FORMAT: 'delta' });
      await fleet.kill9('scheduler', 0);
      await fleet.kill9('scheduler', 1);
    },
  },
  {
    id: 'executor-killed',
    title: 'an executor (and the MCP server it started) is killed (kill -9) mid-load and started again',
    async inject({ fleet }) {
      await fleet.kill9('executor', 0);
    },
  },
  {
    id: 'executor-paused',
    title: 'an executor is paused (SIGSTOP) for 7 s, past its 3 s job lock, and then resumed',
    async inject({ fleet }) {
      fleet.signal('executor', 0, 'SIGSTOP');
      await sleep(7000);
      fleet.signal('executor', 0, 'SIGCONT');
    },
  },
  {
    id: 'archiver-killed',
    title:
      'PostgreSQL refuses the archive for 6 s (its table locked, the archiver’s sessions terminated) and the archiver is killed (kill -9) mid-batch',
    at: 0.5,
    archive: true,
    async inject({ fleet, archive, note }) {
      if (!archive) throw new Error('this scenario needs the archive on');
      const release = await archive.block();
      const blockedAt = Date.now();
      // A batch claimed and its INSERT waiting on the lock: the archiver is mid-batch when it is killed.
      const midBatch = await poll(() => archive.archiverWaiting(), 15_000, '').then(
        () => true,
        () => false,
      );
      note('archiver mid-batch when killed', midBatch ? 'yes' : 'no (no batch within 15 s)');
      await fleet.kill9('archiver', 0);
      await sleep(Math.max(0, 6000 - (Date.now() - blockedAt)));
      note('archiver sessions terminated', await release());
    },
  },
  callbackReceiverKilled(4000),
  scheduleSchedulerKilled(),
];

/**
 * The archive's faults: a hand-off followed by a pause of every scheduler before the final checkpoint,
 * PostgreSQL killed, archivers killed at random, text PostgreSQL cannot hold.
 */
export const ARCHIVE_SCENARIOS: readonly FaultScenario[] = [
  {
    id: 'archive-handoff-paused',
    title:
      'every scheduler is paused (SIGSTOP) for 1.6 s right after a run is handed to the outbox, before its final checkpoint, 7 times',
    at: 0.2,
    archive: true,
    async inject({ fleet, redis, admin, outboxKey, note }) {
      if (!redis) throw new Error('this scenario needs a single private Redis (it watches it with MONITOR)');
      let pauses = 0;
      let caught = 0;
      let pausing: Promise<void> | undefined;
      const keys = createKeys(outboxKey.slice(0, -':{archive}:outbox'.length));
      const pause = async (runId: string) => {
        for (const i of [0, 1]) fleet.signal('scheduler', i, 'SIGSTOP');
        // Whether the pause fell between the hand-off and the final checkpoint (the record not final yet).
        if ((await admin.hget(keys.runMeta(runId), 'final')) !== '1') caught += 1;
        // Past the entry's due time (1 s) and an archiver's look at it.
        await sleep(1600);
        for (const i of [0, 1]) fleet.signal('scheduler', i, 'SIGCONT');
        pauses += 1;
        await sleep(1000);
        pausing = undefined;
      };
      // MONITOR on a raw socket: each command Redis runs is one line; a hand-off is a ZADD to the outbox.
      const handOff = `"zadd" "${outboxKey}"`;
      const watch = connect(redis.port, '127.0.0.1');
      watch.on('error', () => undefined);
      watch.write('MONITOR\r\n');
      let buffered = '';
      watch.on('data', (chunk: Buffer) => {
        const lines = (buffered + chunk.toString('utf8')).split('\r\n');
        buffered = lines.pop() ?? '';
        if (pausing || pauses >= 7) return;
        const line = lines.find((l) => l.toLowerCase().includes(handOff.toLowerCase()));
        const runId = line ? /"([^"]+)"\s*$/.exec(line)?.[1] : undefined;
        if (runId) pausing = pause(runId);
      });
      await poll(() => pauses >= 7, 40_000, '').catch(() => undefined);
      await pausing;
      watch.destroy();
      note('pauses of every scheduler right after a hand-off', pauses);
      note('  of which before the run’s final checkpoint', caught);
    },
  },
  {
    id: 'postgres-killed',
    title: "the archive's PostgreSQL is killed (immediate shutdown) mid-load and started again 6 s later",
    at: 0.4,
    archive: true,
    privatePostgres: true,
    async inject({ postgres, note }) {
      if (!postgres) throw new Error('this scenario needs a PostgreSQL of its own');
      await postgres.kill();
      const downAt = Date.now();
      await sleep(6000);
      await postgres.start();
      note('PostgreSQL down ms', Date.now() - downAt);
    },
  },
  {
    id: 'archivers-killed',
    title: 'the archiver is killed (kill -9) at 5 random moments, each time started again',
    at: 0.3,
    archive: true,
    async inject({ fleet, note }) {
      const gaps: number[] = [];
      for (let i = 0; i < 5; i += 1) {
        const gap = 300 + Math.floor(Math.random() * 2500);
        gaps.push(gap);
        await sleep(gap);
        await fleet.kill9('archiver', 0);
      }
      note('ms between archiver kills', gaps.join(', '));
    },
  },
  {
    id: 'archive-odd-text',
    title: 'a third of the runs hold text PostgreSQL cannot store (a NUL, a lone surrogate) in their input',
    at: 0.5,
    archive: true,
    input: (runId, i) => `${runInput(runId)}${i % 3 === 0 ? ' odd \u0000 and \ud800 text' : ''}`,
    async inject({ waitProgress }) {
      await waitProgress(50, 30_000);
    },
  },
];

/** No fault at all: the control that shows the checker finds nothing on an undisturbed workload. */
export const BASELINE: FaultScenario = {
  id: 'baseline',
  title: 'nothing is injected (control)',
  async inject() {},
};
