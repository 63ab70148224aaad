import { pino, type Logger, type LoggerOptions } from 'pino';

/** The root logger of a process: JSON lines, secrets redacted, component name bound. */
export function createLogger(component: string, options: LoggerOptions = {}): Logger {
  return pino({
    level: options.level ?? 'info',
    base: { component },
    redact: {
      paths: [
        'apiKey',
        '*.apiKey',
        'authorization',
        '*.authorization',
        'headers.authorization',
        'password',
        '*.password',
      ],
      censor: '[redacted]',
    },
    ...options,
  });
}

export type { Logger };
