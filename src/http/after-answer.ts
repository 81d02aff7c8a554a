/**
 * "Once this answer left": effects that must not be seen before a client has its answer (a
 * write's change reaching subscribers, SPEC §6.5 and §11.1) wait for the response's 'finish' (the
 * answer handed to the OS) or 'close' (the client left). A request made by this process on behalf
 * of another (an MCP tool call's inner `POST /graphql/<uri>`) waits for both answers: its own, then
 * the outer one the agent is waiting for (`followedBy`).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';

/** Runs `fn` once the answer left (at once when it already did). */
export type AfterAnswer = (fn: () => void) => void;

/** The answer a request made on another's behalf must also wait for, when it is one (MCP's internal calls); undefined otherwise. */
export type OuterAnswer = (req: IncomingMessage) => AfterAnswer | undefined;

/**
 * Runs callbacks once the answer was handed to the OS ('finish') or the client left ('close'),
 * in the order they were given; at once when that already happened. One listener pair per
 * response, however many callbacks.
 */
export function afterAnswerOf(res: ServerResponse): AfterAnswer {
  let waiting: Array<() => void> | undefined;
  let answered = false;
  const run = () => {
    answered = true;
    res.off('finish', run);
    res.off('close', run);
    const fns = waiting ?? [];
    waiting = undefined;
    for (const fn of fns) fn();
  };
  return (fn) => {
    if (answered || res.writableFinished || res.destroyed) return fn();
    if (!waiting) {
      waiting = [];
      res.once('finish', run);
      res.once('close', run);
    }
    waiting.push(fn);
  };
}

/** `inner`, then `outer` when there is one: `fn` runs once both answers left. */
export function followedBy(inner: AfterAnswer, outer: AfterAnswer | undefined): AfterAnswer {
  return outer ? (fn) => inner(() => outer(fn)) : inner;
}
