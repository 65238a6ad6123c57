/**
 * Where the MongoDB store reports what an operator should know: weakened
 * consistency settings at start, change-stream endings and reopens. A pino
 * logger fits as it is (`logger.warn({...}, "message")`).
 */
export interface StoreLogger {
  warn(fields: Record<string, unknown>, message: string): void;
  info?(fields: Record<string, unknown>, message: string): void;
}
