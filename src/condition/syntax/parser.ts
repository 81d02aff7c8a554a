import { ConditionSyntaxError } from '../errors.js';
import type { ArgumentNode, SyntaxNode } from './syntax-tree.js';
import { ARROW, NEWLINE, tokenize, type Token } from './tokenizer.js';

const AND = 'and';
const OR = 'or';
const NOT = 'not';

/**
 * Parses a condition into a syntax tree with the algorithm of Undertow's
 * `PredicatedHandlersParser` (a shunting-yard), kept deliberately close to it: which inputs are
 * accepted depends on its details (`not not x` fails, `(secure)` fails, `true()` works, a quoted
 * `'and'` is still the operator), and conditions are copied between RESTHeart and Outrigger.
 */
export function parseSyntax(source: string): SyntaxNode {
  const queue = new TokenQueue(tokenize(source));
  return new ShuntingYard(source, queue).parse(true);
}

class TokenQueue {
  private index = 0;
  constructor(private readonly tokens: readonly Token[]) {}

  get isEmpty(): boolean {
    return this.index >= this.tokens.length;
  }
  poll(): Token | undefined {
    return this.tokens[this.index++];
  }
  peek(offset = 0): Token | undefined {
    return this.tokens[this.index + offset];
  }
  /** Puts back the last `count` polled tokens (Undertow pushes them back onto its deque). */
  unpoll(count: number): void {
    this.index -= count;
  }
}

const isOperator = (text: string): boolean => text === AND || text === OR || text === NOT || text === ARROW;

/** Characters that cannot stand where a value or an operand is expected. */
const isSpecialCharacter = (text: string): boolean => text === '(' || text === ')' || text === ',' || text === '=' || text === '[' || text === ']';

function precedence(operator: string): number {
  if (operator === NOT) return 3;
  if (operator === AND) return 2;
  if (operator === OR) return 1;
  return -1000; // '->', Undertow's handler arrow
}

class ShuntingYard {
  constructor(
    private readonly source: string,
    private readonly tokens: TokenQueue,
  ) {}

  private error(position: number, message: string): ConditionSyntaxError {
    return new ConditionSyntaxError(this.source, position, message);
  }

  private unexpectedEnd(): ConditionSyntaxError {
    return this.error(this.source.length, 'unexpected end of input: a closing bracket or a value is missing');
  }

  parse(topLevel: boolean): SyntaxNode {
    const operators: Token[] = [];
    const output: SyntaxNode[] = [];
    const lines: SyntaxNode[] = [];

    while (!this.tokens.isEmpty) {
      const token = this.tokens.poll()!;
      const text = token.text;
      if (text === '{') {
        output.push(this.parse(false));
      } else if (text === '}') {
        if (topLevel) throw this.error(token.position, "unexpected '}'");
        break;
      } else if (text === NEWLINE || text === ';') {
        if (text === NEWLINE && this.continuesOnNextLine()) continue;
        this.endLine(operators, output, lines);
      } else if (isSpecialCharacter(text)) {
        if (text === '(') {
          operators.push(token);
        } else if (text === ')') {
          for (;;) {
            const operator = operators.pop();
            if (operator === undefined) throw this.error(token.position, "unexpected ')': there is no '(' to close");
            if (operator.text === '(') break;
            output.push({ kind: 'operator', token: operator });
          }
        } else {
          output.push({ kind: 'operator', token });
        }
      } else if (isOperator(text)) {
        const rank = precedence(text);
        for (let top = operators.at(-1); top !== undefined && top.text !== '('; top = operators.at(-1)) {
          if (rank > precedence(top.text)) break;
          output.push({ kind: 'operator', token: operators.pop()! });
        }
        operators.push(token);
      } else {
        output.push(this.parseExpression(token));
      }
    }
    this.endLine(operators, output, lines);
    if (lines.length === 1) return lines[0]!;
    return { kind: 'block', token: lines[1]?.token ?? { text: '', position: 0, textPosition: 0, quoted: false }, lines };
  }

  /** A newline followed by `and`/`or`/`not` continues the expression on the next line. */
  private continuesOnNextLine(): boolean {
    let offset = 0;
    while (this.tokens.peek(offset)?.text === NEWLINE) offset++;
    const next = this.tokens.peek(offset);
    return next !== undefined && (next.text === AND || next.text === OR || next.text === NOT);
  }

  private endLine(operators: Token[], output: SyntaxNode[], lines: SyntaxNode[]): void {
    while (operators.length > 0) {
      const operator = operators.pop()!;
      if (operator.text === '(') throw this.error(operator.position, "missing ')': this '(' is never closed");
      output.push({ kind: 'operator', token: operator });
    }
    if (output.length === 0) return;
    const node = this.collapse(output.pop()!, output);
    if (output.length > 0) {
      // Something is left of a complete expression: point where an operator is missing.
      const extra = output.at(-1)!;
      throw this.error(leftmostPosition(node), invalidExpressionMessage(extra.token.text));
    }
    lines.push(node);
  }

  /** Turns the postfix output into a tree, popping operands right to left. */
  private collapse(node: SyntaxNode, output: SyntaxNode[]): SyntaxNode {
    if (node.kind !== 'operator') return node;
    const text = node.token.text;
    const operand = (): SyntaxNode => {
      const next = output.pop();
      if (next === undefined) throw this.error(node.token.position, `invalid expression: '${text}' is missing an operand`);
      return this.collapse(next, output);
    };
    if (text === AND || text === OR) {
      const right = operand();
      const left = operand();
      return { kind: text, token: node.token, left, right };
    }
    if (text === NOT) return { kind: 'not', token: node.token, operand: operand() };
    if (text === ARROW) throw this.error(node.token.position, "'->' belongs to Undertow's handler syntax and has no meaning in a condition");
    return node;
  }

  /** A predicate call: `name`, `name(...)` or the legacy `name[...]`. */
  private parseExpression(name: Token): SyntaxNode {
    if (name.text === 'true' || name.text === 'false') return { kind: 'operator', token: name };
    const next = this.tokens.peek();
    if (next === undefined || (next.text !== '(' && next.text !== '[')) {
      if (next !== undefined && isSpecialCharacter(next.text)) {
        throw this.error(next.position, `unexpected '${next.text}' after '${name.text}'`);
      }
      return { kind: 'call', token: name, args: new Map() };
    }
    const end = next.text === '[' ? ']' : ')';
    this.tokens.poll();
    let current = this.tokens.poll();
    if (current === undefined) throw this.unexpectedEnd();
    if (current.text === '{') return this.singleArrayArgument(name, end);

    const args = new Map<string | null, ArgumentNode>();
    while (current.text !== end) {
      const equals = this.tokens.poll();
      if (equals === undefined) throw this.unexpectedEnd();
      if (equals.text !== '=') {
        if (equals.text === end && args.size === 0) {
          return { kind: 'call', token: name, args: new Map([[null, { kind: 'value', token: current }]]) };
        }
        if (equals.text === ',') {
          // Undertow switches to the positional list here even after named values, dropping them.
          this.tokens.unpoll(2);
          return { kind: 'call', token: name, args: new Map([[null, { kind: 'array', token: name, items: this.readList(end) }]]) };
        }
        throw this.error(equals.position, `unexpected '${equals.text}' in the parameters of ${name.text}: expected '=', ',' or '${end}'`);
      }
      const value = this.tokens.poll();
      if (value === undefined) throw this.unexpectedEnd();
      if (value.text === '{') {
        args.set(current.text, { kind: 'array', token: value, items: this.readList('}'), name: current });
      } else {
        if (isOperator(value.text) || isSpecialCharacter(value.text)) {
          throw this.error(
            value.position,
            `unexpected '${value.text}' as the value of ${current.text}: quote it if it is meant literally, or use another value (operator words are reserved even when quoted)`,
          );
        }
        args.set(current.text, { kind: 'value', token: value, name: current });
      }
      current = this.tokens.poll();
      if (current === undefined) throw this.unexpectedEnd();
      if (current.text !== end) {
        if (current.text !== ',') throw this.error(current.position, `expected ',' or '${end}' in the parameters of ${name.text}`);
        current = this.tokens.poll();
        if (current === undefined) throw this.unexpectedEnd();
      }
    }
    return { kind: 'call', token: name, args };
  }

  /** `name({a, b})`: the list goes to the default parameter. */
  private singleArrayArgument(name: Token, end: string): SyntaxNode {
    const items = this.readList('}');
    const close = this.tokens.poll();
    if (close === undefined) throw this.unexpectedEnd();
    if (close.text !== end) throw this.error(close.position, `expected '${end}' after the list given to ${name.text}`);
    return { kind: 'call', token: name, args: new Map([[null, { kind: 'array', token: name, items }]]) };
  }

  /** Reads `a, b, c<end>` (the opening bracket is already consumed). */
  private readList(end: string): Token[] {
    const items: Token[] = [];
    let item = this.tokens.poll();
    if (item === undefined) throw this.unexpectedEnd();
    if (item.text === end) return items;
    while (item !== undefined) {
      const separator = this.tokens.poll();
      if (separator === undefined) throw this.unexpectedEnd();
      items.push(item);
      if (separator.text === end) return items;
      if (separator.text !== ',') throw this.error(separator.position, `expected ',' or '${end}' in a list of values`);
      item = this.tokens.poll();
    }
    throw this.unexpectedEnd();
  }
}

function leftmostPosition(node: SyntaxNode): number {
  return node.kind === 'and' || node.kind === 'or' ? leftmostPosition(node.left) : node.token.position;
}

function invalidExpressionMessage(text: string): string {
  if (text === NOT) return "invalid expression: 'not not x' is not accepted (as in Undertow); write not (not x)";
  const lower = text.toLowerCase();
  if (lower !== text && (lower === AND || lower === OR || lower === NOT)) {
    return `invalid expression near '${text}': operators are lower-case (${lower})`;
  }
  return `invalid expression near '${text}': predicates must be joined with and / or`;
}
