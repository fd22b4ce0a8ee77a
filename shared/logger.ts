import pino, { type Logger } from 'pino';

export type { Logger };

/** The process's root logger: structured JSON lines on stdout. Children add a scope. */
export function createLogger(level: string, base: Record<string, unknown> = {}): Logger {
  return pino({ level, base: { ...base }, timestamp: pino.stdTimeFunctions.isoTime });
}
