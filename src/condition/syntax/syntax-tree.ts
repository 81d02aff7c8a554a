import type { Token } from './tokenizer.js';

/** A parameter value as written: one token, or a `{a, b}` list (also the positional `v1, v2` form). */
export type ArgumentNode =
  { readonly kind: 'value'; readonly token: Token; readonly name?: Token } | { readonly kind: 'array'; readonly token: Token; readonly items: readonly Token[]; readonly name?: Token };

/**
 * The parse tree of a condition, before predicates and attributes are resolved. `call` holds its
 * arguments by parameter name; the key `null` is the positional (default-parameter) value.
 */
export type SyntaxNode =
  | { readonly kind: 'call'; readonly token: Token; readonly args: ReadonlyMap<string | null, ArgumentNode> }
  | { readonly kind: 'and' | 'or'; readonly token: Token; readonly left: SyntaxNode; readonly right: SyntaxNode }
  | { readonly kind: 'not'; readonly token: Token; readonly operand: SyntaxNode }
  /** `true`/`false`, and any operator token left over by the shunting-yard (`(`, `,`...). */
  | { readonly kind: 'operator'; readonly token: Token }
  /** Several lines (or `;`-separated parts): Undertow's handler blocks, never a valid condition. */
  | { readonly kind: 'block'; readonly token: Token; readonly lines: readonly SyntaxNode[] };
