/**
 * W3C Trace Context (https://www.w3.org/TR/trace-context/) as plain strings: reading a client's
 * `traceparent`, writing ours, and new ids. Used on every request whether or not an exporter is
 * configured, so it allocates nothing it does not return and draws no random bytes per id: ids
 * come from a pool of crypto-random bytes refilled 4 KiB at a time.
 */
import { randomFillSync } from 'node:crypto';

/** What a `traceparent` header says (version 00). */
export interface TraceParent {
  traceId: string;
  spanId: string;
  /** 1 when the caller sampled (recorded) its span, else 0. */
  flags: number;
}

const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;
const ZERO_TRACE = '00000000000000000000000000000000';
const ZERO_SPAN = '0000000000000000';

/**
 * A valid `traceparent`, or null (absent, malformed, all-zero ids, version ff, or a version 00
 * header with extra fields): a proxy then starts a new trace, as the W3C recommendation says.
 */
export function parseTraceparent(header: string | string[] | undefined): TraceParent | null {
  if (typeof header !== 'string' || header.length < 55 || header.length > 512) return null;
  const m = TRACEPARENT.exec(header.trim());
  if (!m) return null;
  const [, version, traceId, spanId, flags, rest] = m;
  if (version === 'ff' || (version === '00' && rest !== undefined)) return null;
  if (traceId === ZERO_TRACE || spanId === ZERO_SPAN) return null;
  return { traceId: traceId!, spanId: spanId!, flags: parseInt(flags!, 16) & 1 };
}

export function formatTraceparent(traceId: string, spanId: string, sampled: boolean): string {
  return `00-${traceId}-${spanId}-${sampled ? '01' : '00'}`;
}

const pool = Buffer.allocUnsafe(4096);
let offset = pool.length;

function randomHex(bytes: number): string {
  if (offset + bytes > pool.length) {
    randomFillSync(pool);
    offset = 0;
  }
  const hex = pool.toString('hex', offset, offset + bytes);
  offset += bytes;
  // An all-zero id is invalid; 2^-64 at worst, but cheap to rule out.
  return /^0+$/.test(hex) ? randomHex(bytes) : hex;
}

export const newTraceId = (): string => randomHex(16);
export const newSpanId = (): string => randomHex(8);
