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
 */
import { defaultFieldResolver, type GraphQLFieldResolver, type GraphQLIsTypeOfFn } from 'graphql';

/** Fields resolved between two readings of the clock (a reading costs about as much as 50 fields). */
const CHECK_EVERY = 1024;

export class ExecutionDeadline {
  halted = false;
  private calls = 0;

  /**
   * @param at `performance.now()` time after which execution stops.
   * @param onHalt called once, when the deadline passes or `aborted()` turns true.
   */
  constructor(
    private readonly at: number,
    private readonly onHalt: () => void,
    private readonly aborted: () => boolean,
  ) {}

  readonly fieldResolver: GraphQLFieldResolver<unknown, unknown> = (source, args, context, info) => {
    if (this.halted) return null;
    if (++this.calls === CHECK_EVERY) {
      this.calls = 0;
      if (performance.now() >= this.at || this.aborted()) {
        this.halted = true;
        this.onHalt();
        return null;
      }
    }
    return defaultFieldResolver(source, args, context, info);
  };
}

/** The `isTypeOf` of every object type: false once the request's execution is halted. */
export const notHalted: GraphQLIsTypeOfFn<unknown, unknown> = (_source, context) =>
  (context as { deadline?: ExecutionDeadline } | null)?.deadline?.halted !== true;
