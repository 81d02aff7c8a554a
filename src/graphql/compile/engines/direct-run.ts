/**
 * Direct execution (issue 39), the run: a plan's reads started as the prefetcher starts them
 * (reads/prefetch.ts: the root reads at once; on each read's documents, as they arrive, document
 * by document and field by field, the joins below), and once every read has settled, the answer
 * built in one synchronous pass, keys in the document's order. The result is exactly graphql-js's
 * or nothing: a read that failed, a document that is not an object, a list that is not an array,
 * or a scalar graphql-js would convert or refuse makes the run give up (GAVE_UP), and the request
 * is executed again by graphql-js over the reads this run recorded (RequestState.replay), which
 * words and locates every error.
 */
import type { ExecutionResult } from 'graphql';
import { readPath } from '../../values/paths.js';
import type { RequestState } from '../../reads/request-state.js';
import type { ObjectPlan, ReadStep, Step } from './direct-plan.js';
import { GAVE_UP, type EnginePlan } from './engine.js';

/** An operation planned for direct execution (direct-plan.ts), and how often its data did not fit. */
export class DirectPlan implements EnginePlan {
  /** Answers given up over documents it cannot answer; past a few, the document goes back to graphql-jit (direct.ts). */
  gaveUp = 0;

  /** @param root The root selection (its reads are the root fields; its document is the root value). */
  constructor(readonly root: ObjectPlan) {}

  run(state: RequestState): Promise<ExecutionResult | typeof GAVE_UP> {
    return runDirect(this, state);
  }
}

/** A read's outcome, shared by the documents that asked for the same read (the batcher's shared promise). */
interface Outcome {
  done: boolean;
  ok: boolean;
  value: unknown;
  /** The reads started on the value's documents (when its object reads further). */
  below: Level | undefined;
}

/** The reads started on one list of documents: per read step, per document, its outcome. */
interface Level {
  readonly outcomes: Array<Array<Outcome | undefined>>;
}

class Run {
  /** A read failed (the backend, the ACL, the client leaving): the data was never looked at. */
  failedRead = false;
  /** Settling of every read started, in the order started; reads started later are appended. */
  readonly waits: Promise<void>[] = [];
  /** Per read step, per promise: one outcome (and one start of the reads below) per distinct read. */
  private readonly seen = new Map<ReadStep, Map<Promise<unknown>, Outcome>>();

  constructor(private readonly state: RequestState) {}

  start(plan: ObjectPlan, docs: readonly unknown[], root: boolean): Level {
    const reads = plan.reads;
    const outcomes: Array<Array<Outcome | undefined>> = reads.map(() => new Array<Outcome | undefined>(docs.length));
    for (let i = 0; i < docs.length; i++) {
      const doc = docs[i];
      if (!root && (doc === null || doc === undefined)) continue;
      for (let k = 0; k < reads.length; k++) (outcomes[k] as Array<Outcome | undefined>)[i] = this.read(reads[k] as ReadStep, doc);
    }
    return { outcomes };
  }

  private read(step: ReadStep, doc: unknown): Outcome {
    let result: unknown;
    try {
      result = step.read(doc, step.args, this.state, step.projection);
    } catch (error) {
      this.failedRead = true;
      return { done: true, ok: false, value: error, below: undefined };
    }
    if (!(result instanceof Promise)) return { done: true, ok: true, value: result, below: this.below(step, result) };
    let byPromise = this.seen.get(step);
    if (byPromise === undefined) {
      byPromise = new Map();
      this.seen.set(step, byPromise);
    }
    const known = byPromise.get(result);
    if (known !== undefined) return known;
    const outcome: Outcome = { done: false, ok: false, value: undefined, below: undefined };
    byPromise.set(result, outcome);
    this.waits.push(
      result.then(
        (value) => {
          outcome.done = true;
          outcome.ok = true;
          outcome.value = value;
          outcome.below = this.below(step, value);
        },
        (error: unknown) => {
          this.failedRead = true;
          outcome.done = true;
          outcome.value = error;
        },
      ),
    );
    return outcome;
  }

  /** The reads below a read's documents, started when they arrive; undefined when there are none. */
  private below(step: ReadStep, value: unknown): Level | undefined {
    if (step.object.reads.length === 0 || value === null || value === undefined) return undefined;
    if (step.single) return this.start(step.object, [value], false);
    return Array.isArray(value) ? this.start(step.object, value, false) : undefined;
  }
}

/** Runs a plan: the answer, or GAVE_UP. */
async function runDirect(plan: DirectPlan, state: RequestState): Promise<ExecutionResult | typeof GAVE_UP> {
  const run = new Run(state);
  const level = run.start(plan.root, [undefined], true);
  for (let settled = 0; settled < run.waits.length;) {
    const batch = run.waits.slice(settled);
    settled = run.waits.length;
    await Promise.all(batch);
  }
  const data = build(plan.root, undefined, level, 0);
  // Documents the plan cannot answer, not a failed read, count towards leaving the document to graphql-jit.
  if (data === GAVE_UP) {
    if (!run.failedRead) plan.gaveUp++;
    return GAVE_UP;
  }
  return { data };
}

function build(plan: ObjectPlan, doc: unknown, level: Level | undefined, index: number): Record<string, unknown> | typeof GAVE_UP {
  const steps = plan.steps;
  const values = plan.values;
  for (let k = 0; k < steps.length; k++) {
    const step = steps[k] as Step;
    let value: unknown;
    if (step.kind === 'typename') {
      value = step.typeName;
    } else if (step.kind === 'leaf') {
      value = step.path === undefined ? (doc as Record<string, unknown>)[step.name] : readPath(doc, step.path);
      if (value === undefined) value = null;
      else if (value !== null && !step.accepts(value)) return GAVE_UP;
    } else {
      value = buildRead(step, level?.outcomes[step.index]?.[index]);
      if (value === GAVE_UP) return GAVE_UP;
    }
    values[k] = value;
  }
  return plan.make(values);
}

/** What a read's field answers for one document: null, its document's object, or the list of them. */
function buildRead(step: ReadStep, outcome: Outcome | undefined): unknown {
  if (outcome === undefined || !outcome.done || !outcome.ok) return GAVE_UP;
  const value = outcome.value;
  if (value === null || value === undefined) return null;
  if (step.single) return isDocument(value) ? build(step.object, value, outcome.below, 0) : GAVE_UP;
  if (!Array.isArray(value)) return GAVE_UP;
  const items: unknown[] = new Array(value.length);
  for (let i = 0; i < value.length; i++) {
    const item: unknown = value[i];
    if (item === null || item === undefined) items[i] = null;
    else if (!isDocument(item)) return GAVE_UP;
    else {
      const built = build(step.object, item, outcome.below, i);
      if (built === GAVE_UP) return GAVE_UP;
      items[i] = built;
    }
  }
  return items;
}

/** A document graphql-js completes as an object the way the plan does: a plain object, not an array. */
function isDocument(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
