import { parseAttribute, type CompiledAttribute } from '../attributes/attribute-parser.js';
import { ConditionSyntaxError } from '../errors.js';
import { findPredicate, predicateNames } from '../predicates/registry.js';
import type { PredicateFunction } from '../runtime/evaluation-scope.js';
import type { ArgumentNode, SyntaxNode } from '../syntax/syntax-tree.js';
import type { Token } from '../syntax/tokenizer.js';
import { PredicateArguments, type BuildContext, type ParameterKind, type ParameterValue, type PredicateDefinition } from './parameters.js';
import { checkUserVariable, stringList, userAttribute, userListPart } from './user-variables.js';
import { closest } from '../../util/did-you-mean.js';

export interface CompileOptions {
  readonly allowUserVariables: boolean;
}

export interface CompiledTree {
  readonly evaluate: PredicateFunction;
  readonly usesRequestBody: boolean;
  readonly usesResponse: boolean;
}

const INT_MAX = 2 ** 31 - 1;
const MAX_DEPTH = 1000;

/**
 * Resolves a syntax tree into one predicate function: looks predicates up, coerces their
 * parameters (as Undertow's `coerceToType` does), parses attributes and builds each predicate
 * once. Every error a condition can have surfaces here, at parse time, never when evaluating.
 */
export function compileTree(source: string, tree: SyntaxNode, options: CompileOptions): CompiledTree {
  return new Compiler(source, options).compile(tree);
}

class Compiler {
  private usesRequestBody = false;
  private usesResponse = false;
  /** Binding predicates skip the work of binding when nothing reads `${...}` or `$x`. */
  private readonly bindingsRead: boolean;

  constructor(
    private readonly source: string,
    private readonly options: CompileOptions,
  ) {
    this.bindingsRead = source.includes('$');
  }

  compile(tree: SyntaxNode): CompiledTree {
    const evaluate = this.node(tree);
    return { evaluate, usesRequestBody: this.usesRequestBody, usesResponse: this.usesResponse };
  }

  private error(position: number, message: string): ConditionSyntaxError {
    return new ConditionSyntaxError(this.source, position, message);
  }

  private node(node: SyntaxNode, depth = 0): PredicateFunction {
    // Evaluation recurses as deep as the tree: keep it far from the stack limit.
    if (depth > MAX_DEPTH) throw this.error(node.token.position, `the condition nests deeper than ${MAX_DEPTH} operators; split it`);
    switch (node.kind) {
      case 'and': {
        const left = this.node(node.left, depth + 1);
        const right = this.node(node.right, depth + 1);
        return (scope) => left(scope) && right(scope);
      }
      case 'or': {
        const left = this.node(node.left, depth + 1);
        const right = this.node(node.right, depth + 1);
        return (scope) => left(scope) || right(scope);
      }
      case 'not': {
        const operand = this.node(node.operand, depth + 1);
        return (scope) => !operand(scope);
      }
      case 'operator':
        if (node.token.text === 'true') return () => true;
        if (node.token.text === 'false') return () => false;
        throw this.error(node.token.position, `unexpected '${node.token.text}'`);
      case 'block':
        if (node.lines.length === 0) throw this.error(0, 'the condition is empty: write a predicate such as path-prefix(/api) or true');
        throw this.error(node.token.position, 'a condition is a single expression: join the lines with and / or');
      case 'call':
        return this.call(node.token, node.args);
    }
  }

  private call(name: Token, args: ReadonlyMap<string | null, ArgumentNode>): PredicateFunction {
    const definition = findPredicate(name.text);
    if (definition === undefined) throw this.error(name.position, unknownPredicateMessage(name.text));

    const values = new Map<string, ParameterValue>();
    const positions = new Map<string, number>();
    for (const [key, argument] of args) {
      const parameter = key ?? definition.defaultParameter;
      if (parameter === undefined) {
        throw this.error(name.position, `${name.text} takes no positional value: name its parameters (${describeParameters(definition)})`);
      }
      const kind = definition.parameters[parameter];
      if (kind === undefined) {
        const at = (argument.name ?? argument.token).position;
        throw this.error(at, `unknown parameter ${parameter} for ${name.text}: it takes ${describeParameters(definition)}`);
      }
      values.set(parameter, this.coerce(argument, kind, parameter, name.text));
      positions.set(parameter, argument.kind === 'value' ? argument.token.textPosition : argument.token.position);
    }
    const missing = definition.required.filter((parameter) => !values.has(parameter));
    if (missing.length > 0) {
      throw this.error(name.position, `required parameters [${missing.join(', ')}] not provided for predicate ${name.text}`);
    }

    const context: BuildContext = {
      bindingsRead: this.bindingsRead,
      error: (message, parameter, offset = 0) => {
        const at = parameter === undefined ? undefined : positions.get(parameter);
        return this.error(at === undefined ? name.position : at + offset, `${name.text}: ${message}`);
      },
    };
    const predicate = definition.build(new PredicateArguments(values), context);
    if (definition.readsRequestBody) this.usesRequestBody = true;
    if (definition.readsResponse) this.usesResponse = true;
    return predicate;
  }

  private coerce(argument: ArgumentNode, kind: ParameterKind, parameter: string, predicate: string): ParameterValue {
    switch (kind) {
      case 'string[]': {
        if (argument.kind === 'value') return stringList([this.listItem(argument.token, true)]);
        return stringList(argument.items.map((item) => this.listItem(item, false)));
      }
      case 'attribute[]': {
        const tokens = argument.kind === 'value' ? [argument.token] : argument.items;
        return tokens.map((token) => this.attribute(token));
      }
      default: {
        if (argument.kind === 'array') {
          throw this.error(argument.token.position, `parameter ${parameter} of ${predicate} takes a single value, not a list`);
        }
        const token = argument.token;
        if (kind === 'attribute') return this.attribute(token);
        this.refuseUserVariable(token, parameter, predicate);
        if (kind === 'string') return token.text;
        // Java's Boolean.valueOf: anything but a case-insensitive "true" is false.
        if (kind === 'boolean') return token.text.toLowerCase() === 'true';
        return this.integer(token, kind === 'integer' ? INT_MAX : Number.MAX_SAFE_INTEGER, parameter, predicate);
      }
    }
  }

  private integer(token: Token, max: number, parameter: string, predicate: string): number {
    const text = token.text;
    const value = /^[+-]?\d+$/.test(text) ? Number(text) : NaN;
    if (!Number.isSafeInteger(value) || value > max || value < -max - 1) {
      throw this.error(token.textPosition, `parameter ${parameter} of ${predicate} must be an integer, not '${text}'`);
    }
    return value;
  }

  private attribute(token: Token): CompiledAttribute {
    const check = checkUserVariable(token.text, this.options.allowUserVariables);
    if (check.kind === 'invalid') throw this.error(token.textPosition, check.message);
    const attribute = check.kind === 'variable' ? userAttribute(check.path) : parseAttribute(token.text, { source: this.source, position: token.textPosition });
    if (attribute.usesResponse) this.usesResponse = true;
    return attribute;
  }

  private listItem(token: Token, spreadArrays: boolean): string | ReturnType<typeof userListPart> {
    const check = checkUserVariable(token.text, this.options.allowUserVariables);
    if (check.kind === 'invalid') throw this.error(token.textPosition, check.message);
    return check.kind === 'variable' ? userListPart(check.path, spreadArrays) : token.text;
  }

  private refuseUserVariable(token: Token, parameter: string, predicate: string): void {
    const check = checkUserVariable(token.text, this.options.allowUserVariables);
    if (check.kind === 'invalid') throw this.error(token.textPosition, check.message);
    if (check.kind === 'variable') {
      throw this.error(token.textPosition, `parameter ${parameter} of ${predicate} cannot be an @user variable; compare it with equals(...) instead`);
    }
  }
}

function describeParameters(definition: PredicateDefinition): string {
  const names = Object.keys(definition.parameters);
  return names.length === 0 ? 'no parameters' : names.join(', ');
}

function unknownPredicateMessage(name: string): string {
  const known = predicateNames();
  const lower = name.toLowerCase();
  if (known.includes(lower) || lower === 'and' || lower === 'or' || lower === 'not') {
    return `no predicate named ${name}: predicate names, operators and true/false are lower-case (${lower})`;
  }
  const guess = closest(name, known);
  if (guess) return `no predicate named ${name}; did you mean ${guess}? (known predicates are ${known.join(', ')})`;
  return `no predicate named ${name}; known predicates are ${known.join(', ')}`;
}
