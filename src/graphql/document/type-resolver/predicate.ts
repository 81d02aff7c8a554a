/**
 * RESTHeart's `$typeResolver` predicates (undertow predicate syntax, the three predicates its
 * GraphQL plugin registers): `field-exists(a, b.c)`, `field-eq(field=a.b, value=1)`,
 * `value-eq(value='"text"')`, combined with `and`, `or`, `not` and parentheses. Values are JSON
 * (RESTHeart parses them with BsonUtils.parse): `value=true`, `value='"a string"'`, `value='{"a":1}'`.
 */
import { canonicalKey } from '../../values/ejson.js';
import { readPath } from '../../values/paths.js';

export type Predicate =
  | { readonly kind: 'field-exists'; readonly fields: readonly string[] }
  | { readonly kind: 'field-eq'; readonly field: string; readonly value: unknown; readonly key: string }
  | { readonly kind: 'value-eq'; readonly value: unknown; readonly key: string }
  | { readonly kind: 'and' | 'or'; readonly items: readonly Predicate[] }
  | { readonly kind: 'not'; readonly item: Predicate };

export class PredicateSyntaxError extends Error {}

/** Whether the predicate holds for a value a resolver returned (a document, usually). */
export function matches(p: Predicate, value: unknown): boolean {
  switch (p.kind) {
    case 'field-exists':
      return p.fields.every((f) => readPath(value, f) !== undefined);
    case 'field-eq': {
      const v = readPath(value, p.field);
      return v !== undefined && canonicalKey(v) === p.key;
    }
    case 'value-eq':
      return canonicalKey(value) === p.key;
    case 'and':
      return p.items.every((i) => matches(i, value));
    case 'or':
      return p.items.some((i) => matches(i, value));
    case 'not':
      return !matches(p.item, value);
  }
}

/** The predicate in canonical text (used in messages). */
export function describe(p: Predicate): string {
  switch (p.kind) {
    case 'field-exists':
      return `field-exists(${p.fields.join(', ')})`;
    case 'field-eq':
      return `field-eq(field=${p.field}, value=${JSON.stringify(p.value)})`;
    case 'value-eq':
      return `value-eq(value=${JSON.stringify(p.value)})`;
    case 'and':
    case 'or':
      return p.items.map((i) => (i.kind === 'and' || i.kind === 'or' ? `(${describe(i)})` : describe(i))).join(` ${p.kind} `);
    case 'not':
      return `not ${p.item.kind === 'and' || p.item.kind === 'or' ? `(${describe(p.item)})` : describe(p.item)}`;
  }
}

type Token = { t: 'word' | 'quoted' | 'punct'; v: string; at: number };

function tokenize(text: string): Token[] {
  const out: Token[] = [];
  let i = 0;
  while (i < text.length) {
    const c = text[i] as string;
    if (/\s/.test(c)) {
      i++;
    } else if ('(),={}'.includes(c)) {
      out.push({ t: 'punct', v: c, at: i });
      i++;
    } else if (c === '"' || c === "'") {
      const end = text.indexOf(c, i + 1);
      if (end < 0) throw new PredicateSyntaxError(`unterminated ${c} quote at position ${i}`);
      out.push({ t: 'quoted', v: text.slice(i + 1, end), at: i });
      i = end + 1;
    } else {
      let j = i;
      while (j < text.length && !/[\s(),={}"']/.test(text[j] as string)) j++;
      out.push({ t: 'word', v: text.slice(i, j), at: i });
      i = j;
    }
  }
  return out;
}

const PARAMS: Record<string, { names: readonly string[]; required: readonly string[]; default: string }> = {
  'field-exists': { names: ['fields'], required: ['fields'], default: 'fields' },
  'field-eq': { names: ['field', 'value'], required: ['field', 'value'], default: 'field' },
  'value-eq': { names: ['value'], required: ['value'], default: 'value' },
};

/** Parses a predicate; throws PredicateSyntaxError saying what is wrong and where. */
export function parsePredicate(text: string): Predicate {
  const tokens = tokenize(text);
  if (tokens.length === 0) throw new PredicateSyntaxError('the predicate is empty');
  return new PredicateParser(tokens).parse();
}

/** A recursive-descent parser over one predicate's tokens: or, and, not, parentheses, calls. */
class PredicateParser {
  private pos = 0;

  constructor(private readonly tokens: readonly Token[]) {}

  parse(): Predicate {
    const result = this.orExpr();
    if (this.pos < this.tokens.length) throw new PredicateSyntaxError(`unexpected "${(this.peek() as Token).v}" ${this.where()}`);
    return result;
  }

  private peek(): Token | undefined {
    return this.tokens[this.pos];
  }

  private where(): string {
    return this.peek() ? `at position ${(this.peek() as Token).at}` : 'at the end';
  }

  private expect(v: string): void {
    const tok = this.peek();
    if (!tok || tok.t !== 'punct' || tok.v !== v) throw new PredicateSyntaxError(`expected "${v}" ${this.where()}`);
    this.pos++;
  }

  private isWord(v: string): boolean {
    return this.peek()?.t === 'word' && this.peek()?.v.toLowerCase() === v;
  }

  private orExpr(): Predicate {
    const items = [this.andExpr()];
    while (this.isWord('or')) {
      this.pos++;
      items.push(this.andExpr());
    }
    return items.length === 1 ? (items[0] as Predicate) : { kind: 'or', items };
  }

  private andExpr(): Predicate {
    const items = [this.unary()];
    while (this.isWord('and')) {
      this.pos++;
      items.push(this.unary());
    }
    return items.length === 1 ? (items[0] as Predicate) : { kind: 'and', items };
  }

  private unary(): Predicate {
    if (this.isWord('not')) {
      this.pos++;
      return { kind: 'not', item: this.unary() };
    }
    const tok = this.peek();
    if (tok?.t === 'punct' && tok.v === '(') {
      this.pos++;
      const inner = this.orExpr();
      this.expect(')');
      return inner;
    }
    return this.call();
  }

  private value(): string[] {
    const tok = this.peek();
    if (!tok) throw new PredicateSyntaxError('expected a value at the end');
    if (tok.t === 'punct' && tok.v === '{') {
      this.pos++;
      const items: string[] = [];
      while (!(this.peek()?.t === 'punct' && this.peek()?.v === '}')) {
        items.push(...this.value());
        if (this.peek()?.t === 'punct' && this.peek()?.v === ',') this.pos++;
        else if (!(this.peek()?.t === 'punct' && this.peek()?.v === '}')) throw new PredicateSyntaxError(`expected "," or "}" ${this.where()}`);
      }
      this.pos++;
      return items;
    }
    if (tok.t === 'punct') throw new PredicateSyntaxError(`expected a value ${this.where()}`);
    this.pos++;
    return [tok.v];
  }

  private call(): Predicate {
    const tok = this.peek();
    if (!tok || tok.t !== 'word') throw new PredicateSyntaxError(`expected a predicate name ${this.where()}`);
    const spec = PARAMS[tok.v];
    if (!spec) {
      throw new PredicateSyntaxError(`unknown predicate "${tok.v}" at position ${tok.at} (RESTHeart's $typeResolver knows field-exists, field-eq and value-eq)`);
    }
    const name = tok.v;
    this.pos++;
    this.expect('(');
    const params = new Map<string, string[]>();
    const positional: string[] = [];
    while (!(this.peek()?.t === 'punct' && this.peek()?.v === ')')) {
      const next = this.tokens[this.pos + 1];
      if (this.peek()?.t === 'word' && next?.t === 'punct' && next.v === '=') {
        const key = (this.peek() as Token).v;
        if (!spec.names.includes(key)) throw new PredicateSyntaxError(`${name} has no parameter "${key}" (it takes ${spec.names.join(', ')})`);
        this.pos += 2;
        params.set(key, this.value());
      } else positional.push(...this.value());
      if (this.peek()?.t === 'punct' && this.peek()?.v === ',') this.pos++;
      else if (!(this.peek()?.t === 'punct' && this.peek()?.v === ')')) throw new PredicateSyntaxError(`expected "," or ")" ${this.where()}`);
    }
    this.pos++;
    if (positional.length > 0) {
      if (params.has(spec.default)) throw new PredicateSyntaxError(`${name}: ${spec.default} given twice`);
      params.set(spec.default, positional);
    }
    for (const r of spec.required) if (!params.has(r)) throw new PredicateSyntaxError(`${name} needs ${r}`);
    const one = (key: string): string => {
      const v = params.get(key) as string[];
      if (v.length !== 1) throw new PredicateSyntaxError(`${name}: ${key} takes one value`);
      return v[0] as string;
    };
    const json = (raw: string): unknown => {
      try {
        return JSON.parse(raw) as unknown;
      } catch {
        throw new PredicateSyntaxError(`${name}: value ${raw} is not JSON (quote strings as value='"text"')`);
      }
    };
    if (name === 'field-exists') return { kind: 'field-exists', fields: params.get('fields') as string[] };
    if (name === 'field-eq') {
      const v = json(one('value'));
      return { kind: 'field-eq', field: one('field'), value: v, key: canonicalKey(v) };
    }
    const v = json(one('value'));
    return { kind: 'value-eq', value: v, key: canonicalKey(v) };
  }
}
