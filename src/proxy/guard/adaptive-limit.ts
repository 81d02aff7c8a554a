/**
 * The adaptive concurrency limit (SPEC §13): how many requests may be in flight to the backend,
 * learned from its latency. A gradient against the minimum latency measured, as Envoy's adaptive
 * concurrency filter computes it, with the minimum re-measured every period from what the period
 * saw rather than by pinning the limit to its floor (docs/protection.md says why and compares).
 *
 * Per answer it costs a store into a fixed array and one comparison; the arithmetic runs once per
 * sample window (100 ms), on the answer that closes it. No timer, nothing allocated per request.
 */
import { performance, type EventLoopUtilization } from 'node:perf_hooks';
import type { AdaptiveConcurrencyConfig } from '../../config/upstream-protection.js';

/** At most this many latencies are kept per window; past it every other one replaces an old one. */
const SAMPLES_KEPT = 256;
/** A window with fewer samples than this is extended rather than judged (a median of 1 is noise). */
const MIN_SAMPLES = 3;
/** How far the gradient may move the limit in one window: halve it at worst... */
const GRADIENT_MIN = 0.5;
/**
 * Growth comes from the headroom alone, as in concurrency-limits' Gradient2 (its gradient is
 * clamped to [0.5, 1]). Envoy's clamp of 2 doubled the limit in one window while the answers that
 * show its effect take a round trip (≥ the backend's latency): once the minimum was re-measured
 * against a slowed backend, the limit swung between its floor and ~120 (the virtual-time slowdown,
 * test/unit/proxy/slowdown-simulated.test.ts).
 */
const GRADIENT_MAX = 1;
/** A decrease is smoothed so a single noisy window (a GC pause) does not halve the limit. */
const DECREASE_SMOOTHING = 0.5;
/**
 * Past this share of a window spent busy, Outrigger's own event loop is the bottleneck and the
 * latencies it measured are its own queue, not the backend's: the limit does not shrink then
 * (shedding would refuse requests a healthy backend could serve, measured: 60 % of a saturating
 * benchmark's answers).
 */
const OWN_LOOP_BUSY = 0.9;

/** The share of the time since the last call that this thread's event loop was busy. */
export function eventLoopBusy(): () => number {
  let last: EventLoopUtilization = performance.eventLoopUtilization();
  return () => {
    const now = performance.eventLoopUtilization();
    const busy = performance.eventLoopUtilization(now, last).utilization;
    last = now;
    return busy;
  };
}

export class AdaptiveLimit {
  /** The current limit, between minLimit and maxLimit. */
  limit: number;
  private readonly samples = new Float64Array(SAMPLES_KEPT);
  private count = 0;
  private seen = 0;
  private windowEnds = 0;
  /** The most requests in flight any answer of this window saw. */
  private windowPeak = 0;
  /** The least window median of the current period; becomes `minRtt` when the period ends. */
  private periodMin = Infinity;
  private periodEnds = 0;
  /** The latency of an unqueued request (ms): what the gradient compares against. */
  minRtt = Infinity;
  /** The last window's median (ms), for metrics. */
  lastSample = 0;

  constructor(
    private readonly o: AdaptiveConcurrencyConfig,
    readonly maxLimit: number,
    /** Told each time the limit changes, so the line can start waiting requests when it grew. */
    private readonly changed: (limit: number) => void,
    /** How busy Outrigger's own loop was since the last window (tests give a constant). */
    private readonly busy: () => number = eventLoopBusy(),
  ) {
    this.limit = maxLimit;
  }

  /** One answer's latency (dispatch to response head) in ms, with the time it came back. */
  sample(ms: number, now: number, inFlight = 0): void {
    if (inFlight > this.windowPeak) this.windowPeak = inFlight;
    const seen = this.seen++;
    if (this.count < SAMPLES_KEPT) this.samples[this.count++] = ms;
    else if ((seen & 1) === 0) this.samples[seen % SAMPLES_KEPT] = ms;
    if (now >= this.windowEnds) this.closeWindow(now);
  }

  private closeWindow(now: number): void {
    if (this.windowEnds === 0) {
      // The first answer opens the first window and the first period.
      this.windowEnds = now + this.o.sampleWindowMs;
      this.periodEnds = now + this.o.minRttPeriodSeconds * 1000;
      return;
    }
    if (this.count < MIN_SAMPLES) return;
    const median = medianOf(this.samples, this.count);
    // Only a window with no more in flight than the floor may raise the baseline: above it, what the
    // limit let queue inside the backend is in every latency, and taking that as the baseline let the
    // next period tolerate a longer queue, and so on (a slowdown that outlasted two periods crept up).
    const unqueued = this.windowPeak <= this.o.minLimit;
    this.count = 0;
    this.seen = 0;
    this.windowPeak = 0;
    this.windowEnds = now + this.o.sampleWindowMs;
    this.lastSample = median;
    if (unqueued && median < this.periodMin) this.periodMin = median;
    if (median < this.minRtt) this.minRtt = median;
    if (now >= this.periodEnds) {
      // Re-measured: the least the last period saw at low concurrency, so a backend that became
      // slower for good is the new baseline within one period, and the limit can grow back against
      // it. A period with no such window keeps the baseline (see `unqueued`).
      if (this.periodMin !== Infinity) this.minRtt = this.periodMin;
      this.periodMin = Infinity;
      this.periodEnds = now + this.o.minRttPeriodSeconds * 1000;
    }
    this.update(median);
  }

  private update(sample: number): void {
    // The larger of the two allowances, not their sum: toleranceMs is for fast backends' scheduling
    // noise, and added to a slow backend's 1.5 × it let the queue reach ~2 × its latency.
    const allowed = Math.max(this.minRtt * this.o.tolerance, this.minRtt + this.o.toleranceMs);
    const gradient = Math.min(GRADIENT_MAX, Math.max(GRADIENT_MIN, allowed / sample));
    let next = gradient * this.limit;
    // Headroom as Envoy adds it: room for the queue a growing limit needs to be seen at all.
    next += Math.sqrt(next);
    if (next < this.limit) {
      if (this.busy() > OWN_LOOP_BUSY) return;
      next = this.limit + (next - this.limit) * DECREASE_SMOOTHING;
    }
    const limit = Math.max(this.o.minLimit, Math.min(this.maxLimit, Math.floor(next)));
    if (limit === this.limit) return;
    this.limit = limit;
    this.changed(limit);
  }
}

/** The median of the first `n` values (sorted in place: the window's samples are done with). */
function medianOf(values: Float64Array, n: number): number {
  const window = values.subarray(0, n).sort();
  return n % 2 === 1 ? window[n >> 1]! : (window[(n >> 1) - 1]! + window[n >> 1]!) / 2;
}
