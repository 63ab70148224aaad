import { randomBytes } from 'node:crypto';
import { parseArgs } from 'node:util';
import { createKeys } from '@agent-reach/protocol';
import { jsonLine } from './terminal.js';

/** Usage of `agent-reach schedules`. */
export const SCHEDULES_USAGE = `Usage: agent-reach schedules <command>
  ls                                  every schedule, one JSON object per line (next and last firings)
  show <schedule-id>                  one schedule with its last firings
  create (--agent A | --workflow W) --input TEXT (--cron EXPR [--timezone ZONE] | --every MS)
         [--overlap skip|buffer_one|allow_all] [--catchup MS] [--metadata k=v,k=v] [--model M] [--key NAME]
                                      runs of A (or workflows W) on a cron expression (in an IANA time zone, default UTC)
                                      or an interval; {{scheduled_at}} in TEXT is the firing time. Its
                                      runs start as the API key NAME of API_KEYS (default: the first)
  pause <schedule-id> | resume <schedule-id> | trigger <schedule-id> | delete <schedule-id>
Exit: 0 done, 2 bad usage (a bad cron or time zone is named), 3 no such schedule.`;

type Internal = typeof import('@agent-reach/scheduler/internal');

const OPTIONS = {
  agent: { type: 'string' },
  workflow: { type: 'string' },
  input: { type: 'string' },
  cron: { type: 'string' },
  timezone: { type: 'string' },
  every: { type: 'string' },
  overlap: { type: 'string' },
  catchup: { type: 'string' },
  metadata: { type: 'string' },
  model: { type: 'string' },
  key: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

const out = (line: string) => process.stdout.write(`${line}\n`);
const err = (line: string) => process.stderr.write(`${line}\n`);

/** A usage problem: printed with the usage line, exit 2. */
class ScheduleUsage extends Error {}

/** `agent-reach schedules …`: schedules in Redis, as the API keeps them; the exit code. */
export async function schedules(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({ args: argv, options: OPTIONS, allowPositionals: true });
  const [sub, id] = positionals;
  if (!sub || values.help) {
    out(SCHEDULES_USAGE);
    return sub || values.help ? 0 : 2;
  }
  const [{ openContext }, m] = await Promise.all([
    import('./context.js'),
    import('@agent-reach/scheduler/internal'),
  ]);
  const ctx = await openContext(process.env);
  const store = new m.ScheduleStore(ctx.redis, createKeys(ctx.config.keyPrefix));
  try {
    if (sub === 'ls') {
      for (const s of await store.list()) out(jsonLine(await store.view(s)));
      return 0;
    }
    if (sub === 'create') {
      const created = create(m, ctx.config.api.keys, values);
      await store.create(created);
      out(jsonLine(await store.view(created)));
      return 0;
    }
    if (!['show', 'pause', 'resume', 'trigger', 'delete'].includes(sub))
      throw new ScheduleUsage(
        `unknown schedules command "${sub}"; use ls, show, create, pause, resume, trigger or delete`,
      );
    if (!id) throw new ScheduleUsage(`schedules ${sub} needs a schedule id`);
    const schedule = await store.get(id);
    if (!schedule) {
      err(`agent-reach: schedule ${id} not found`);
      return 3;
    }
    if (sub === 'delete') await store.delete(id);
    else if (sub === 'trigger') await store.trigger(id, Date.now());
    const shown =
      sub === 'pause' || sub === 'resume' ? await store.setPaused(schedule, sub === 'pause') : schedule;
    if (sub !== 'delete') out(jsonLine(await store.view(shown)));
    else out(`schedule ${id} deleted`);
    return 0;
  } catch (error) {
    if (error instanceof ScheduleUsage || error instanceof m.ScheduleInvalid) {
      err(
        `agent-reach: ${error instanceof m.ScheduleInvalid ? `--${flagOf(error.path)} ${error.problem}` : error.message}`,
      );
      return 2;
    }
    throw error;
  } finally {
    await store.close();
    await ctx.close();
  }
}

/** The CLI flag of a schedule field (`/every_ms` → `every`). */
function flagOf(path: string): string {
  const field = path.replace(/^\//, '');
  return { every_ms: 'every', catchup_window_ms: 'catchup' }[field] ?? field;
}

/** The schedule `create` asks for, owned by the API key it names (its tenant, its agents). */
function create(
  m: Internal,
  keys: ReadonlyArray<{ name: string; key: string; agents?: readonly string[]; tenants?: readonly string[] }>,
  v: { [K in keyof typeof OPTIONS]?: string | boolean },
) {
  const str = (name: keyof typeof OPTIONS) => (typeof v[name] === 'string' ? (v[name] as string) : undefined);
  const agent = str('agent');
  const input = str('input');
  const workflow = str('workflow');
  if ((!agent && !workflow) || !input)
    throw new ScheduleUsage('schedules create needs --agent (or --workflow) and --input');
  const entry = str('key') ? keys.find((k) => k.name === str('key')) : keys[0];
  if (!entry)
    throw new ScheduleUsage(
      str('key') ? `no API key named "${str('key')}" in API_KEYS` : 'API_KEYS names no key',
    );
  const principal = new m.ApiKeyTable([entry]).identify(entry.key);
  if (!principal) throw new ScheduleUsage(`API key "${entry.name}" is not usable`);
  if (agent && principal.agents && !principal.agents.has(agent))
    throw new ScheduleUsage(`API key "${entry.name}" may not run agent "${agent}"`);
  const int = (name: 'every' | 'catchup') => {
    const text = str(name);
    if (text === undefined) return undefined;
    if (!/^\d+$/.test(text)) throw new ScheduleUsage(`--${name} must be a number of ms`);
    return Number(text);
  };
  const overlap = str('overlap');
  if (overlap !== undefined && !(m.OVERLAP_POLICIES as readonly string[]).includes(overlap))
    throw new ScheduleUsage(`--overlap must be one of ${m.OVERLAP_POLICIES.join(', ')}`);
  const metadata = str('metadata');
  return m.scheduleOf(
    `sch_${randomBytes(12).toString('hex')}`,
    {
      ...(agent ? { agent } : {}),
      ...(workflow ? { workflow } : {}),
      input,
      ...(str('cron') !== undefined ? { cron: str('cron') } : {}),
      ...(str('timezone') !== undefined ? { timezone: str('timezone') } : {}),
      ...(int('every') !== undefined ? { every_ms: int('every') } : {}),
      ...(int('catchup') !== undefined ? { catchup_window_ms: int('catchup') } : {}),
      ...(overlap !== undefined ? { overlap: overlap as 'skip' } : {}),
      ...(str('model') !== undefined ? { model: str('model') } : {}),
      ...(metadata
        ? {
            metadata: Object.fromEntries(
              metadata.split(',').map((kv) => kv.split('=', 2) as [string, string]),
            ),
          }
        : {}),
    },
    { tenant: principal.tenant, keyId: principal.id, keyName: principal.name },
    Date.now(),
  );
}
