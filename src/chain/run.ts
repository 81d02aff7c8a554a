/**
 * Runs the list of stages on a request: every `open`, then each `run` in order, synchronously
 * until a stage waits (then the rest once its promise settles), `failed` and the error's answer
 * when one throws, every `close` in reverse order when the response closes. The lists are fixed
 * when the chain is built (one for untraced requests, one with the recorded stages wrapped), so a
 * request allocates nothing here and meets the same object shapes every time.
 */
import type { ChainRequest } from './request.js';
import { ANSWERED, type Stage, type Step } from './stage.js';
import { tracedRun } from './traced.js';

interface Entry {
  readonly stage: Stage;
  readonly when: ((request: ChainRequest) => boolean) | null;
  readonly run: (request: ChainRequest) => Step;
}

export class Chain {
  private readonly plain: Entry[] = [];
  private readonly traced: Entry[] = [];
  private readonly opening: Stage[];
  private readonly failing: Stage[];
  private readonly closing: Stage[];

  constructor(
    stages: readonly Stage[],
    private readonly answerFailure: (request: ChainRequest, error: unknown) => void,
  ) {
    for (const stage of stages) {
      const run = stage.run;
      if (run === undefined) continue;
      const when = stage.when ?? null;
      this.plain.push({ stage, when, run });
      this.traced.push({ stage, when, run: stage.span ? tracedRun({ ...stage, run, span: stage.span }) : run });
    }
    this.opening = stages.filter((s) => s.open !== undefined);
    this.failing = stages.filter((s) => s.failed !== undefined);
    this.closing = stages.filter((s) => s.close !== undefined).reverse();
  }

  open(request: ChainRequest): void {
    const stages = this.opening;
    for (let i = 0; i < stages.length; i++) stages[i]!.open!(request);
  }

  /** Runs the stages; a failure, now or once a wait settles, is answered through `request.fail`. */
  start(request: ChainRequest): void {
    try {
      const pending = this.runFrom(request, request.trace?.recording ? this.traced : this.plain, 0);
      if (pending) pending.catch(request.fail);
    } catch (error) {
      request.fail(error);
    }
  }

  private runFrom(request: ChainRequest, entries: Entry[], from: number): Promise<void> | void {
    for (let i = from; i < entries.length; i++) {
      const entry = entries[i]!;
      if (entry.when !== null && !entry.when.call(entry.stage, request)) continue;
      const step = entry.run.call(entry.stage, request);
      if (step === undefined) continue;
      if (step === ANSWERED) return;
      return step.then((done) => (done === ANSWERED ? undefined : this.runFrom(request, entries, i + 1)));
    }
  }

  fail(request: ChainRequest, error: unknown): void {
    const stages = this.failing;
    for (let i = 0; i < stages.length; i++) stages[i]!.failed!(request, error);
    this.answerFailure(request, error);
  }

  close(request: ChainRequest, completed: boolean): void {
    const stages = this.closing;
    for (let i = 0; i < stages.length; i++) stages[i]!.close!(request, completed);
  }
}
