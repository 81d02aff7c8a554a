/**
 * The time limit (`graphql.timeoutMs`) inside execution (issue 25). A timer cannot fire while
 * graphql-js completes a large result synchronously, so racing one against execution let that
 * work run to its end. Instead:
 * - the default field resolver (every field without a mapping: the leaves, most of the work)
 *   reads the clock every CHECK_EVERY fields, and once the deadline has passed (or the request
 *   was aborted) marks the execution halted and answers null;
 * - every object type's `isTypeOf` (installed by compile/resolvers.ts, one call per object) answers
 *   false once halted, so graphql-js stops completing objects: each remaining object of a list
 *   becomes one error instead of all its fields being resolved. The answer is then a 504.
 * The same resolver spends the output budget (`graphql.maxCost.output`, issue 34): one value per
 * field it resolves and one per item of a list it returns (a list stored inside a document, whose
 * length the estimate could only assume). Past the budget execution halts the same way, whatever
 * the estimate said, and the answer is a 400 OUTPUT_TOO_LARGE.
 */
import { defaultFieldResolver, type GraphQLFieldResolver, type GraphQLIsTypeOfFn } from 'graphql';

/** Fields resolved between two readings of the clock (a reading costs about as much as 50 fields). */
const CHECK_EVERY = 1024;

export class ExecutionDeadline {
  halted = false;
  /** Why execution halted: the clock (or the client), or the output budget. */
  haltedBy: 'time' | 'output' | null = null;
  private calls = 0;
  private values = 0;

  /**
   * @param at `performance.now()` time after which execution stops.
   * @param onHalt called once, when the deadline passes or `aborted()` turns true.
   */
  constructor(
    private readonly at: number,
    private readonly onHalt: () => void,
    private readonly aborted: () => boolean,
    /** Values the answer may hold (`graphql.maxCost.output`); default: no budget. */
    private readonly maxOutput = Infinity,
  ) {}

  private halt(by: 'time' | 'output'): null {
    this.halted = true;
    this.haltedBy = by;
    this.onHalt();
    return null;
  }

  readonly fieldResolver: GraphQLFieldResolver<unknown, unknown> = (source, args, context, info) => {
    if (this.halted) return null;
    if (++this.calls === CHECK_EVERY) {
      this.calls = 0;
      if (performance.now() >= this.at || this.aborted()) return this.halt('time');
    }
    const value = defaultFieldResolver(source, args, context, info);
    // A list is counted before graphql-js completes its items, so a long one is never walked.
    this.values += Array.isArray(value) ? value.length + 1 : 1;
    if (this.values > this.maxOutput) return this.halt('output');
    return value;
  };

  /** The field error of an answer stopped by the output budget. */
  static outputError(maxOutput: number) {
    return {
      message: `the answer holds more than ${maxOutput} values, which this service allows per operation (graphql.maxCost.output); a list stored in the documents is longer than the estimate assumed (graphql.storedListItems): select fewer fields or lists`,
      extensions: { code: 'OUTPUT_TOO_LARGE', maxOutput },
    };
  }
}

/** The `isTypeOf` of every object type: false once the request's execution is halted. */
export const notHalted: GraphQLIsTypeOfFn<unknown, unknown> = (_source, context) => (context as { deadline?: ExecutionDeadline } | null)?.deadline?.halted !== true;
