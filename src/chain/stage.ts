/**
 * The contract of one stage of the request chain (see README.md). A stage is a plain object made
 * once, when the chain is built; per request it reads and writes the request's slots and returns
 * nothing, or a promise only when it has something to wait for (a cold key, a body to read, the
 * upstream): a known caller goes from request to dispatch without a microtask.
 */
import type { SpanHandle } from '../observability/tracing/tracing.js';
import type { ChainRequest } from './request.js';

/** A stage answered the request itself (a cache hit, a refusal it wrote): the stages after it do not run. */
export const ANSWERED = 'answered';

/** What a stage's `run` returns: done at once, answered, or a promise of either when it waits. */
export type Step = void | typeof ANSWERED | Promise<void | typeof ANSWERED>;

/** A stage whose run is recorded as a child span when a trace records (chain/traced.ts wraps it). */
export interface StageSpan {
  readonly name: string;
  /** Attributes known once the stage is done; `waited`: its run returned a promise. */
  describe?(request: ChainRequest, span: SpanHandle, waited: boolean): void;
}

export interface Stage {
  /** What the README's list calls it. */
  readonly name: string;
  /** Does the stage take part in this request? Absent: every request. */
  when?(request: ChainRequest): boolean;
  /** The stage's part, in list order, after every `open`. */
  run?(request: ChainRequest): Step;
  /** Before any stage runs, synchronously, in list order (the trace begins, the observer looks). */
  open?(request: ChainRequest): void;
  /** When a run (or the upstream) failed, before the error is answered, in list order. */
  failed?(request: ChainRequest, error: unknown): void;
  /** When the response closed (one listener per request), in reverse list order, as middleware unwinds. */
  close?(request: ChainRequest, completed: boolean): void;
  /** Recorded as a child span of a recording trace. */
  readonly span?: StageSpan;
}
