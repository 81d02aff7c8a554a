import { compileTree } from './compile/compiler.js';
import { ConditionSyntaxError } from './errors.js';
import type { Exchange } from './exchange.js';
import { EvaluationScope, type PredicateFunction } from './runtime/evaluation-scope.js';
import { parseSyntax } from './syntax/parser.js';

/** A parsed condition, ready to evaluate on every request. */
export interface Condition {
  /** The text it was parsed from. */
  readonly source: string;
  /** Synchronous, allocation-light, never throws on a well-formed exchange. */
  evaluate(exchange: Exchange): boolean;
  /** True when bson-request-* predicates are used: the caller must offer `requestBody()`. */
  readonly usesRequestBody: boolean;
  /** True when response attributes or predicates are used (`%s`, `%{o,...}`...). */
  readonly usesResponse: boolean;
}

/** Far above any real permission or webhook; bounds parsing work and recursion depth. */
export const MAX_CONDITION_LENGTH = 32_768;

export interface ParseConditionOptions {
  /** Accept `@user.<field>` variables (ACL permissions). Off by default (webhook conditions). */
  readonly allowUserVariables?: boolean;
}

class CompiledCondition implements Condition {
  constructor(
    readonly source: string,
    private readonly root: PredicateFunction,
    readonly usesRequestBody: boolean,
    readonly usesResponse: boolean,
  ) {}

  evaluate(exchange: Exchange): boolean {
    return this.root(new EvaluationScope(exchange));
  }
}

/**
 * Parses a condition in Undertow's predicate language as RESTHeart's ACL uses it. Throws
 * ConditionSyntaxError (with `position`) for anything wrong with it, unknown predicates and
 * attributes and invalid regexes included; the returned condition is compiled once.
 */
export function parseCondition(text: string, options: ParseConditionOptions = {}): Condition {
  if (text.length > MAX_CONDITION_LENGTH) {
    throw new ConditionSyntaxError(text, MAX_CONDITION_LENGTH, `the condition is longer than ${MAX_CONDITION_LENGTH} characters`);
  }
  const tree = parseSyntax(text);
  const compiled = compileTree(text, tree, { allowUserVariables: options.allowUserVariables ?? false });
  return new CompiledCondition(text, compiled.evaluate, compiled.usesRequestBody, compiled.usesResponse);
}
