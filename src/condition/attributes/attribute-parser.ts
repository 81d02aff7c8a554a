import { ConditionSyntaxError } from '../errors.js';
import type { AttributeReader, EvaluationScope } from '../runtime/evaluation-scope.js';
import { lookupAttribute } from './attribute-catalog.js';

/** An exchange attribute value parsed once: literal text, `%...` attributes and `${...}` variables. */
export interface CompiledAttribute {
  readonly read: AttributeReader;
  readonly usesResponse: boolean;
  /** Set when the value never depends on the exchange (plain literal text). */
  readonly constant: string | undefined;
}

/** Where the value sits in the condition, for error positions. */
export interface ValueLocation {
  readonly source: string;
  /** Index in `source` of the value's first character. */
  readonly position: number;
}

type Part = { readonly literal: string } | { readonly read: AttributeReader; readonly usesResponse: boolean };

/**
 * Parses an attribute value the way Undertow's `ExchangeAttributeParser` splits it: `%x` (one
 * character), `%{...}`, `$x` (one character!), `${...}`; `%%` and `$$` are literal; everything
 * else is literal text; several parts concatenate and a part that reads null adds nothing.
 *
 * One deliberate difference: Undertow turns an unknown `%` attribute into literal text with a
 * log warning; here it is a syntax error, so a typo cannot silently make a permission or a
 * webhook never match.
 */
export function parseAttribute(text: string, location: ValueLocation): CompiledAttribute {
  const parts: Part[] = [];
  let literal = '';
  const flushLiteral = (): void => {
    if (literal.length > 0) parts.push({ literal });
    literal = '';
  };
  const fail = (offset: number, message: string): never => {
    throw new ConditionSyntaxError(location.source, location.position + offset, message);
  };

  let i = 0;
  while (i < text.length) {
    const c = text[i]!;
    if (c !== '%' && c !== '$') {
      literal += c;
      i++;
      continue;
    }
    const next = text[i + 1];
    if (next === undefined) {
      fail(i, `a lone '${c}' at the end of '${text}' starts nothing: write '${c}${c}' for a literal '${c}'`);
    } else if (next === c) {
      literal += c;
      i += 2;
    } else if (next === '{') {
      const close = text.indexOf('}', i + 2);
      if (close === -1) fail(i, `'${c}{' in '${text}' is never closed with '}'`);
      const token = text.slice(i, close + 1);
      flushLiteral();
      parts.push(c === '$' ? contextVariable(token) : namedAttribute(token, i, fail));
      i = close + 1;
    } else {
      const token = text.slice(i, i + 2);
      flushLiteral();
      parts.push(c === '$' ? contextVariable(token) : namedAttribute(token, i, fail));
      i += 2;
    }
  }
  flushLiteral();
  return combine(parts);
}

function namedAttribute(token: string, offset: number, fail: (offset: number, message: string) => never): Part {
  const lookup = lookupAttribute(token);
  if ('found' in lookup) return { read: lookup.found.read, usesResponse: lookup.found.usesResponse };
  if ('unsupported' in lookup) return fail(offset, lookup.unsupported);
  return fail(
    offset,
    `unknown attribute '${token}': use one of %m %U %R %q %s %a %{i,Header} %{o,Header} %{q,name} %{c,name} %{REQUEST_PATH} ... (names are case-sensitive), or '%%' for a literal '%'`,
  );
}

/** `${name}` or `$x`: a predicate-context variable bound by an earlier predicate. */
function contextVariable(token: string): Part {
  const name = token.startsWith('${') && token.endsWith('}') && token.length > 3 ? token.slice(2, -1) : token.slice(1);
  return { read: (scope: EvaluationScope) => scope.lookup(name), usesResponse: false };
}

function combine(parts: readonly Part[]): CompiledAttribute {
  if (parts.length === 0) return constant('');
  if (parts.length === 1) {
    const only = parts[0]!;
    return 'literal' in only ? constant(only.literal) : { read: only.read, usesResponse: only.usesResponse, constant: undefined };
  }
  const readers: AttributeReader[] = parts.map((part) => ('literal' in part ? () => part.literal : part.read));
  const usesResponse = parts.some((part) => 'usesResponse' in part && part.usesResponse);
  return {
    read: (scope) => {
      let value = '';
      for (const read of readers) {
        const piece = read(scope);
        if (piece !== null) value += piece;
      }
      return value;
    },
    usesResponse,
    constant: undefined,
  };
}

function constant(value: string): CompiledAttribute {
  return { read: () => value, usesResponse: false, constant: value };
}
