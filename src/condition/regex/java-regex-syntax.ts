/** The parse tree of a Java regular expression, restricted to what can run in linear time. */
export type RegexNode =
  | { readonly type: 'alternation'; readonly options: readonly RegexNode[] }
  | { readonly type: 'sequence'; readonly items: readonly RegexNode[] }
  | { readonly type: 'group'; readonly capturing: boolean; readonly name?: string; readonly body: RegexNode }
  | { readonly type: 'repeat'; readonly body: RegexNode; readonly min: number; readonly max: number; readonly lazy: boolean; readonly counted: boolean }
  | { readonly type: 'char'; readonly code: number }
  | { readonly type: 'class'; readonly negated: boolean; readonly items: readonly ClassItem[] }
  /** A predefined set already written in JavaScript syntax, e.g. `\d`, `[ \t\n\x0B\f\r]`. */
  | { readonly type: 'set'; readonly js: string }
  | { readonly type: 'dot' }
  | { readonly type: 'assertion'; readonly kind: 'start' | 'end' | 'word-boundary' | 'not-word-boundary' };

export type ClassItem =
  | { readonly type: 'range'; readonly from: number; readonly to: number }
  /** A predefined set usable inside a class, in JavaScript class syntax, e.g. `\d` or ` \t\n`. */
  | { readonly type: 'set'; readonly js: string };

/** Flags given by the predicate (`case-sensitive=false`) or a leading `(?ims)`. */
export interface RegexFlags {
  caseInsensitive: boolean;
  multiline: boolean;
  dotAll: boolean;
}

export interface ParsedRegex {
  readonly root: RegexNode;
  readonly flags: RegexFlags;
  readonly captureCount: number;
}

/** A pattern the translator refuses; `offset` is the index in the pattern. */
export class RegexSyntaxError extends Error {
  constructor(
    readonly offset: number,
    message: string,
  ) {
    super(message);
  }
}
