import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { RunCallback } from '@agent-reach/protocol';
import type { Invariant } from './fault-check.js';
import { fork, type ChildProcess } from 'node:child_process';
import { ROOT } from './node-run.js';
import { forget, killOnExit } from './reaper.js';
import type { FaultScenario, ScenarioAttachment } from './scenarios.js';
import { poll, sleep } from './util.js';

/** One line of the receiver's file (callback-receiver.ts). */
export interface ReceivedDelivery {
  id: string;
  type: string;
  runId: string;
  verified: boolean;
  /** Why it did not verify (`verifyWebhook`'s code). */
  error?: string;
}

/** The secret the fleet signs the workload's callbacks with (`*` of `CALLBACK_SECRETS`). */
export const FAULT_CALLBACK_SECRET = 'whsec_ZmF1bHRzLWNhbGxiYWNrLXNlY3JldC0wMQ==';

/**
 * The fleet's callback settings in `callback-receiver-killed`: 127.0.0.1 allowed, and a backoff from
 * 250 ms (doubling, 11 attempts: about 8 minutes in all) so that deliveries missed while the receiver is
 * down come back within seconds of its restart.
 */
export const CALLBACK_FAULT_ENV = {
  CALLBACK_SECRETS: `*=${FAULT_CALLBACK_SECRET}`,
  CALLBACK_ALLOWED_HOSTS: '127.0.0.1',
  CALLBACK_BACKOFF_MS: '250',
  CALLBACK_MAX_ATTEMPTS: '11',
};

/** Deliveries received before the receiver is killed (`callback-receiver-killed`). */
const KILL_AFTER_DELIVERIES = 5;

/** Longest wait, after every run ended, for each ended run's `run.finished` delivery to arrive, in ms. */
export const CALLBACK_SETTLE_MS = 90_000;

/** The receiver's script, run from its source under tsx (see its header). */
const RECEIVER_SCRIPT = path.join(ROOT, 'packages/faults/src/callback-receiver.ts');

/** The receiver process, started again on the same port after a kill. */
class Receiver {
  #child: ChildProcess | undefined;
  #exited: Promise<unknown> = Promise.resolve();
  port = 0;

  constructor(readonly file: string) {}

  async start(): Promise<void> {
    const child = fork(RECEIVER_SCRIPT, [], {
      cwd: ROOT,
      env: {
        ...process.env,
        RECEIVER_SECRET: FAULT_CALLBACK_SECRET,
        RECEIVER_FILE: this.file,
        RECEIVER_PORT: String(this.port),
      },
      execArgv: ['--import', 'tsx'],
      stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
    });
    let err = '';
    child.stderr?.on('data', (d: Buffer) => (err += d.toString()));
    killOnExit(child.pid);
    this.#exited = new Promise((resolve) => child.once('exit', resolve)).then(() => forget(child.pid));
    this.#child = child;
    const ready = await new Promise<{ port: number }>((resolve, reject) => {
      child.on('message', (m: { type?: string; port?: number }) => {
        if (m?.type === 'ready') resolve({ port: Number(m.port) });
      });
      void this.#exited.then(() =>
        reject(new Error(`the callback receiver exited before it was ready:\n${err}`)),
      );
    });
    this.port = ready.port;
  }

  async kill9(): Promise<void> {
    this.#child?.kill('SIGKILL');
    await this.#exited;
  }

  deliveries(): ReceivedDelivery[] {
    if (!existsSync(this.file)) return [];
    return readFileSync(this.file, 'utf8')
      .split('\n')
      .filter(Boolean)
      .flatMap((line) => {
        try {
          return [JSON.parse(line) as ReceivedDelivery];
        } catch {
          return []; // a line being written right now
        }
      });
  }
}

/**
 * What the receiver got, judged against the runs that ended: each ended run's `run.finished` received at
 * least once, every delivery verified, and the deliveries of one event under one id.
 */
export function checkDeliveries(
  deliveries: readonly ReceivedDelivery[],
  ended: readonly string[],
): Array<{ invariant: Invariant; subject: string; detail: string }> {
  const found: Array<{ invariant: Invariant; subject: string; detail: string }> = [];
  const ids = new Map<string, Set<string>>();
  for (const d of deliveries) {
    if (!d.verified) {
      found.push({ invariant: 'callback_unsigned', subject: d.id || '(no id)', detail: d.error ?? '' });
      continue;
    }
    const event = `${d.runId} ${d.type}`;
    ids.set(event, (ids.get(event) ?? new Set()).add(d.id));
  }
  for (const [event, set] of ids)
    if (set.size > 1)
      found.push({ invariant: 'callback_id_differs', subject: event, detail: [...set].join(', ') });
  for (const runId of ended)
    if (!ids.has(`${runId} run.finished`))
      found.push({ invariant: 'callback_lost', subject: runId, detail: 'no run.finished delivery received' });
  return found;
}

/**
 * Every run asks for a `finished` callback to a receiver process, which is killed (kill -9) once the
 * workload is under way and started again on the same port `downMs` later.
 */
export function callbackReceiverKilled(downMs: number): FaultScenario {
  return {
    id: 'callback-receiver-killed',
    title: `every run has a callback; its receiver is killed (kill -9) mid-load and started again ${downMs / 1000} s later`,
    at: 0.3,
    async attach(work): Promise<ScenarioAttachment> {
      const receiver = new Receiver(path.join(work, 'deliveries.jsonl'));
      await receiver.start();
      const url = `http://127.0.0.1:${receiver.port}/hooks`;
      return {
        env: CALLBACK_FAULT_ENV,
        callback: (): RunCallback => ({ url, events: ['finished'] }),
        async inject({ note }) {
          // Killed while deliveries come in: once the first runs' have been received.
          await poll(() => receiver.deliveries().length >= KILL_AFTER_DELIVERIES, 60_000, '').catch(
            () => undefined,
          );
          const before = receiver.deliveries().length;
          await receiver.kill9();
          await sleep(downMs);
          await receiver.start();
          note('deliveries received before the kill', before);
        },
        async check({ ended, note, violation }) {
          const t0 = Date.now();
          const received = () => new Set(receiver.deliveries().map((d) => d.runId));
          await poll(() => ended.every((r) => received().has(r)), CALLBACK_SETTLE_MS, '').catch(
            () => undefined,
          );
          note('wait for callbacks ms', Date.now() - t0);
          const deliveries = receiver.deliveries();
          note('callback deliveries received', deliveries.length);
          note(
            '  of which repeats of an id already received',
            deliveries.length - new Set(deliveries.map((d) => d.id)).size,
          );
          for (const v of checkDeliveries(deliveries, ended)) violation(v.invariant, v.subject, v.detail);
        },
        close: () => receiver.kill9(),
      };
    },
    inject: (ctx) => ctx.attachment!.inject!(ctx),
  };
}
