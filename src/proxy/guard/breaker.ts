/**
 * The circuit breaker of one upstream origin (SPEC §13). Closed, it counts: consecutive
 * connection errors or timeouts, and the share of 5xx among the answers of the last
 * `windowSeconds`. Either past its bound opens it: every request is answered 503 at once, nothing
 * sent, for `coolOffSeconds`. Then it is half-open: `probes` requests go through, the rest are
 * still refused; all probes answered below 500 close it, any failure opens it again.
 *
 * The 5xx window is two counters per second in a ring, so an answer costs two increments; a
 * transition calls `changed` once (the log line and the gauge), never per request.
 */
import type { BreakerConfig } from '../../config/upstream-protection.js';

export type BreakerState = 'closed' | 'open' | 'half-open';
/** The gauge's values: 0 closed, 1 half-open, 2 open. */
export const BREAKER_STATE_VALUE: Record<BreakerState, number> = { closed: 0, 'half-open': 1, open: 2 };

export interface BreakerTransition {
  from: BreakerState;
  to: BreakerState;
  /** Why, in words an operator can act on. */
  reason: string;
}

export class Breaker {
  state: BreakerState = 'closed';
  private consecutive = 0;
  private readonly answers: Uint32Array;
  private readonly errors: Uint32Array;
  /** The second each ring slot holds, so a slot from a lap ago is cleared before reuse. */
  private readonly slotSecond: Float64Array;
  private openUntil = 0;
  private probesOut = 0;
  private probesOk = 0;
  private halfOpenSince = 0;

  constructor(
    private readonly o: BreakerConfig,
    private readonly changed: (t: BreakerTransition) => void,
    private readonly now: () => number = Date.now,
  ) {
    const slots = Math.max(1, Math.ceil(o.windowSeconds));
    this.answers = new Uint32Array(slots);
    this.errors = new Uint32Array(slots);
    this.slotSecond = new Float64Array(slots).fill(-1);
  }

  /** May a request go to the backend now? A half-open breaker hands out its probes. */
  allow(): boolean {
    if (!this.o.enabled || this.state === 'closed') return true;
    if (this.state === 'open') {
      if (this.now() < this.openUntil) return false;
      this.move('half-open', `${this.o.coolOffSeconds} s passed; ${this.o.probes} probe requests decide`);
      this.probesOut = 0;
      this.probesOk = 0;
      this.halfOpenSince = this.now();
    }
    if (this.probesOut >= this.o.probes) {
      // A probe whose client left (or that the line refused) never reports: after another
      // cool-off without a verdict, new probes go.
      if (this.now() - this.halfOpenSince < this.o.coolOffSeconds * 1000) return false;
      this.probesOut = this.probesOk;
      this.halfOpenSince = this.now();
    }
    this.probesOut++;
    return true;
  }

  /** Seconds until an open breaker lets probes through (for Retry-After). */
  get retryAfterSeconds(): number {
    return Math.max(1, Math.ceil((this.openUntil - this.now()) / 1000));
  }

  /** The backend answered (a head came back). */
  answered(status: number): void {
    if (!this.o.enabled) return;
    this.consecutive = 0;
    const failed = status >= 500;
    if (this.state === 'half-open') return this.probe(!failed, `a probe was answered ${status}`);
    if (this.state !== 'closed') return;
    const slot = this.slot();
    this.answers[slot]!++;
    if (failed) {
      this.errors[slot]!++;
      this.judgeRatio();
    }
  }

  /** No answer: the connection failed, or the backend did not answer within upstream.timeoutMs. */
  failed(kind: 'unreachable' | 'timeout'): void {
    if (!this.o.enabled) return;
    if (this.state === 'half-open') return this.probe(false, `a probe failed (${kind})`);
    if (this.state !== 'closed') return;
    if (++this.consecutive >= this.o.failures) this.open(`${this.consecutive} requests in a row failed (last: ${kind}; upstream.breaker.failures)`);
  }

  private probe(ok: boolean, what: string): void {
    if (!ok) return this.open(`${what} while half-open`);
    if (++this.probesOk >= this.o.probes) {
      this.move('closed', `${this.probesOk} probes answered below 500`);
      this.consecutive = 0;
      this.answers.fill(0);
      this.errors.fill(0);
    }
  }

  private judgeRatio(): void {
    let answers = 0;
    let errors = 0;
    const second = Math.floor(this.now() / 1000);
    for (let i = 0; i < this.answers.length; i++) {
      if (second - this.slotSecond[i]! >= this.answers.length) continue;
      answers += this.answers[i]!;
      errors += this.errors[i]!;
    }
    if (answers >= this.o.minAnswers && errors / answers > this.o.ratio)
      this.open(`${errors} of the last ${answers} answers were 5xx within ${this.o.windowSeconds} s (upstream.breaker.ratio ${this.o.ratio})`);
  }

  private slot(): number {
    const second = Math.floor(this.now() / 1000);
    const slot = second % this.answers.length;
    if (this.slotSecond[slot] !== second) {
      this.slotSecond[slot] = second;
      this.answers[slot] = 0;
      this.errors[slot] = 0;
    }
    return slot;
  }

  private open(reason: string): void {
    this.openUntil = this.now() + this.o.coolOffSeconds * 1000;
    this.move('open', `${reason}; requests are answered 503 for ${this.o.coolOffSeconds} s (upstream.breaker.coolOffSeconds)`);
  }

  private move(to: BreakerState, reason: string): void {
    const from = this.state;
    this.state = to;
    if (from !== to) this.changed({ from, to, reason });
  }
}
