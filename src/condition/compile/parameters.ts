import type { CompiledAttribute } from '../attributes/attribute-parser.js';
import type { EvaluationScope, PredicateFunction } from '../runtime/evaluation-scope.js';

/** The Java parameter types Undertow's builders declare, and how a value is coerced to each. */
export type ParameterKind = 'string' | 'string[]' | 'boolean' | 'integer' | 'long' | 'attribute' | 'attribute[]';

/** A `String[]` parameter: fixed at parse time unless it holds an @user variable. */
export interface StringList {
  readonly fixed: readonly string[] | undefined;
  resolve(scope: EvaluationScope): readonly string[];
}

export type ParameterValue = string | StringList | boolean | number | CompiledAttribute | readonly CompiledAttribute[];

/** The coerced parameters of one predicate call, read by name in its builder. */
export class PredicateArguments {
  constructor(private readonly values: ReadonlyMap<string, ParameterValue>) {}

  has(name: string): boolean {
    return this.values.has(name);
  }

  string(name: string): string {
    return this.get(name) as string;
  }

  list(name: string): StringList {
    return this.get(name) as StringList;
  }

  optionalList(name: string): StringList | undefined {
    return this.values.get(name) as StringList | undefined;
  }

  boolean(name: string, fallback: boolean): boolean {
    const value = this.values.get(name);
    return value === undefined ? fallback : (value as boolean);
  }

  number(name: string): number {
    return this.get(name) as number;
  }

  attribute(name: string): CompiledAttribute {
    return this.get(name) as CompiledAttribute;
  }

  optionalAttribute(name: string): CompiledAttribute | undefined {
    return this.values.get(name) as CompiledAttribute | undefined;
  }

  attributes(name: string): readonly CompiledAttribute[] {
    return this.get(name) as readonly CompiledAttribute[];
  }

  private get(name: string): ParameterValue {
    const value = this.values.get(name);
    if (value === undefined) throw new Error(`parameter ${name} was not provided; it must be declared required`);
    return value;
  }
}

/** What a predicate builder may use besides its arguments. */
export interface BuildContext {
  /** True when the condition reads `${...}`/`$x` anywhere, so binding predicates must bind. */
  readonly bindingsRead: boolean;
  /**
   * A syntax error to throw, at the named parameter's value (plus `offset` characters into it),
   * or at the predicate name.
   */
  error(message: string, parameter?: string, offset?: number): Error;
}

/** One predicate name, as a builder registered with Undertow (or RESTHeart) declares it. */
export interface PredicateDefinition {
  readonly name: string;
  readonly parameters: Readonly<Record<string, ParameterKind>>;
  /** The parameter that takes a positional value; none means positional values are refused. */
  readonly defaultParameter?: string;
  readonly required: readonly string[];
  readonly readsRequestBody?: boolean;
  readonly readsResponse?: boolean;
  build(args: PredicateArguments, context: BuildContext): PredicateFunction;
}

/**
 * The declaration most of Undertow's builders make: one parameter, taking the positional value,
 * required. Spread into a definition (`{ ...oneParameter('path', 'path', 'string[]'), build }`).
 */
export function oneParameter(name: string, parameter: string, kind: ParameterKind) {
  return { name, parameters: { [parameter]: kind }, defaultParameter: parameter, required: [parameter] };
}

/** A `String[]` given empty (`{}`): RESTHeart's builders refuse it at build time. */
export function nonEmptyList(list: StringList, error: () => Error): StringList {
  if (list.fixed !== undefined && list.fixed.length === 0) throw error();
  return list;
}
