import type { Exchange } from '../exchange.js';
import { requestViewOf, type RequestView } from './request-view.js';

/**
 * The state of one evaluation of one condition: the exchange and the predicate-context
 * variables (`${name}`, `${1}`, `$1`) that path-template, path-prefix and regex bind for the
 * predicates evaluated after them. Undertow keeps that map on the exchange, so variables leak
 * between conditions evaluated on the same request; here each evaluation starts empty, so one
 * permission or webhook can never see another's bindings.
 */
export class EvaluationScope {
  private bindings: Map<string, string | null> | undefined;
  private viewValue: RequestView | undefined;

  constructor(readonly exchange: Exchange) {}

  get view(): RequestView {
    return (this.viewValue ??= requestViewOf(this.exchange));
  }

  bind(name: string, value: string | null): void {
    (this.bindings ??= new Map()).set(name, value);
  }

  lookup(name: string): string | null {
    return this.bindings?.get(name) ?? null;
  }
}

/** A compiled predicate: cheap, synchronous, never throws on a well-formed exchange. */
export type PredicateFunction = (scope: EvaluationScope) => boolean;

/** A compiled exchange attribute: the value as a string, or null when it is absent. */
export type AttributeReader = (scope: EvaluationScope) => string | null;
