/**
 * `idempotency.required` (SPEC §14): §4 conditions on a write's head where a write that carries no
 * key is refused (400, naming the header and the setting), decided in one place for every door:
 * the REST chain's stage (a POST or PATCH), the GraphQL door (a mutation, and so the MCP mutation
 * tools that call it), and MCP's tool listing (a mutation tool's `idempotencyKey` marked required).
 * The conditions read neither a body nor a response (config/sections.ts refuses those).
 */
import { parseCondition, type Exchange } from '../condition/index.js';
import { badRequest, type OutriggerError } from '../errors.js';

/** Whether a write on this exchange must carry `Idempotency-Key`. */
export type KeyRequired = (exchange: Exchange) => boolean;

/** The conditions parsed once; undefined when none is set, so a door asks nothing of a write without the header. */
export function keyRequiredWhere(conditions: readonly string[]): KeyRequired | undefined {
  if (conditions.length === 0) return undefined;
  const parsed = conditions.map((text) => parseCondition(text));
  return (exchange) => parsed.some((condition) => condition.evaluate(exchange));
}

/** The 400 of a write without the header where a condition matches; `runs` is what the door runs ("write", "mutation"). */
export function keyRequiredRefusal(runs: string): OutriggerError {
  return badRequest(`this ${runs} must carry an Idempotency-Key header (idempotency.required), e.g. Idempotency-Key: "<a new UUID>"`, 'IDEMPOTENCY_KEY_REQUIRED');
}
