/**
 * What the rest of the process sees of a graceful shutdown (SPEC §2; the sequence itself is
 * src/shutdown.ts): whether the drain has begun (readiness answers 503 from then on), and the
 * callbacks to run when the server stops accepting connections. Long-lived streams (GraphQL
 * subscriptions, SSE) register there: they are in-flight requests that never finish by
 * themselves, so they must be ended, with a reconnect hint, before in-flight requests are awaited.
 *
 * Lives in util (the lowest layer) so that any stage can take it from the AppContext and
 * register without importing the shutdown sequence.
 */
export interface ReconnectHint {
  /** Why the stream ends: the process is stopping, another replica will answer. */
  reason: 'shutdown';
  /** How long a client should wait before it reconnects (SSE `retry:`, a close frame's reason). */
  retryAfterMs: number;
}

export type StopAcceptingCallback = (hint: ReconnectHint) => void | Promise<void>;

/** A client that reconnects at once may still hit this replica's closing socket; one second is enough elsewhere. */
export const RECONNECT_AFTER_MS = 1000;

export class Draining {
  private began = false;
  /** When the drain began (Date.now()), 0 before. */
  private beganAt = 0;
  private readonly callbacks: StopAcceptingCallback[] = [];

  /** True from the first signal on: readiness fails, answers carry `Connection: close`. */
  get draining(): boolean {
    return this.began;
  }

  /**
   * Runs `callback` once, when the server stops accepting (after `shutdown.drainSeconds`). It may
   * return a promise; the sequence waits for it, bounded by `shutdown.timeoutSeconds`. Returns a
   * function that removes it again (a feature that stops early).
   */
  onStopAccepting(callback: StopAcceptingCallback): () => void {
    this.callbacks.push(callback);
    return () => {
      const at = this.callbacks.indexOf(callback);
      if (at >= 0) this.callbacks.splice(at, 1);
    };
  }

  /** Milliseconds since the drain began (0 before it did). */
  elapsedMs(): number {
    return this.began ? Date.now() - this.beganAt : 0;
  }

  /** Called by the shutdown sequence only; a second call keeps the first moment. */
  begin(): void {
    if (this.began) return;
    this.began = true;
    this.beganAt = Date.now();
  }

  /** Called by the shutdown sequence only: every callback, each failure reported and not thrown. */
  async stopAccepting(onError: (error: unknown) => void): Promise<void> {
    this.begin();
    const hint: ReconnectHint = { reason: 'shutdown', retryAfterMs: RECONNECT_AFTER_MS };
    await Promise.all(
      this.callbacks.splice(0).map(async (callback) => {
        try {
          await callback(hint);
        } catch (error) {
          onError(error);
        }
      }),
    );
  }
}
