/**
 * A backend call made by Outrigger itself (GraphQL's reads and writes, and so MCP's tools) through
 * the same guard as the pass-through (SPEC §13): the breaker asked first, a place in the line
 * under the adaptive limit, the latency of its head sampled, its failure counted. The promise
 * API costs the allocations the pass-through avoids; these calls already make several.
 */
import { OutriggerError } from '../../errors.js';
import { onAbort, type AbortLike } from '../../util/request-abort.js';
import { DEFAULT, type Priority } from '../upstream-slots.js';
import type { BackendGuard } from './backend-guard.js';

/** How a guarded call is counted in the line: one client bucket for all of Outrigger's own calls. */
export interface GuardedCallOptions {
  priority?: Priority;
  signal?: AbortLike;
}

/** Outrigger's own calls share one per-client share of the line, as one client would. */
const OWN_CALLS = 'outrigger:backend-calls';

/**
 * Runs `send` once the guard admits it; `send` resolves when the backend's head came back (with
 * its status). Throws the guard's 503 when it refuses, or what `send` threw.
 */
export async function guardedCall<T extends { statusCode: number }>(guard: BackendGuard, send: () => Promise<T>, o: GuardedCallOptions = {}): Promise<T> {
  if (!guard.breaker.allow()) throw guard.breakerRefusal();
  await admitted(guard, o);
  const sentAt = performance.now();
  try {
    const response = await send();
    guard.breaker.answered(response.statusCode);
    const now = performance.now();
    guard.limit?.sample(now - sentAt, now, guard.slots.activeCount);
    return response;
  } catch (error) {
    if (!o.signal?.aborted) {
      const code = (error as { code?: string }).code;
      const timeout = code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT';
      guard.breaker.failed(timeout ? 'timeout' : 'unreachable');
      if (timeout) {
        const now = performance.now();
        guard.limit?.sample(now - sentAt, now, guard.slots.activeCount);
      }
    }
    throw error;
  } finally {
    guard.slots.release(OWN_CALLS);
  }
}

function admitted(guard: BackendGuard, o: GuardedCallOptions): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    let stopWatching = (): void => {};
    const waiting = guard.slots.acquire(OWN_CALLS, {
      priority: o.priority ?? DEFAULT,
      start() {
        stopWatching();
        resolve();
      },
      refuse(error: OutriggerError) {
        stopWatching();
        reject(error);
      },
    });
    if (waiting !== null && o.signal !== undefined) {
      stopWatching = onAbort(o.signal, () => {
        waiting.cancel();
        reject(new OutriggerError(499, 'CLIENT_CLOSED', 'the request was cancelled while it waited for the backend'));
      });
    }
  });
}
