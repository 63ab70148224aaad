import { pino, type DestinationStream, type Logger, type LoggerOptions } from 'pino';

/**
 * The root logger of a process: JSON lines, secrets redacted, component name bound. Writes to stdout
 * unless given a `destination` (tests keep the lines).
 */
export function createLogger(
  component: string,
  options: LoggerOptions = {},
  destination?: DestinationStream,
): Logger {
  const settings: LoggerOptions = {
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
  };
  return destination ? pino(settings, destination) : pino(settings);
}

export type { Logger };
