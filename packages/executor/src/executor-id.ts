import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';

/**
 * A new executor id: `executor-<host>-<pid>-<8 random hex>`, so that presence, breaker state and logs
 * tell processes apart, on one host or many (the host name keeps only the run id alphabet).
 */
export function newExecutorId(): string {
  const host = hostname()
    .replace(/[^A-Za-z0-9_.-]/g, '-')
    .slice(0, 64);
  return `executor-${host}-${process.pid}-${randomUUID().slice(0, 8)}`;
}
