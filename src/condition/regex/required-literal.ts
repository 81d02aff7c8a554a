import type { ParsedRegex, RegexNode } from './java-regex-syntax.js';

/**
 * What every match of a pattern must contain, read off its parse tree: a cheap `startsWith` /
 * `includes` test that settles most non-matching inputs before the linear-time engine (an NFA
 * simulation, several times slower than V8's usual engine) runs. Twenty webhooks' conditions are
 * evaluated on every proxied request, and nearly all of them answer "no".
 *
 * Only case-sensitive patterns are analysed (a case-insensitive one spells its letters as
 * classes). Zero-width assertions do not break a run of literal characters; anything else
 * (classes, alternation, optional parts) does.
 */
export interface RequiredLiteral {
  /** Every match starts at the input's start with this (the pattern is anchored by `^`/`\A` or full-match). */
  readonly prefix?: string;
  /** The longest literal every match contains. */
  readonly contains?: string;
}

export function requiredLiteral(parsed: ParsedRegex, fullMatch: boolean): RequiredLiteral {
  if (parsed.flags.caseInsensitive) return {};
  const contains = longest(candidates(parsed.root));
  const anchored = fullMatch || (!parsed.flags.multiline && startsWithAnchor(parsed.root));
  const prefix = anchored ? leadingLiteral(parsed.root) : '';
  return { ...(prefix ? { prefix } : {}), ...(contains && contains !== prefix ? { contains } : {}) };
}

/** Literal runs that every match contains (each one is required; the longest is the best filter). */
function candidates(node: RegexNode): string[] {
  switch (node.type) {
    case 'char':
      return [String.fromCodePoint(node.code)];
    case 'group':
      return candidates(node.body);
    case 'repeat':
      return node.min >= 1 ? candidates(node.body) : [];
    case 'sequence': {
      const found: string[] = [];
      let run = '';
      for (const item of node.items) {
        if (item.type === 'char') run += String.fromCodePoint(item.code);
        else if (item.type === 'assertion') continue;
        else {
          if (run) found.push(run);
          run = '';
          found.push(...candidates(item));
        }
      }
      if (run) found.push(run);
      return found;
    }
    default:
      return [];
  }
}

function startsWithAnchor(node: RegexNode): boolean {
  if (node.type === 'assertion') return node.kind === 'start';
  if (node.type === 'group') return startsWithAnchor(node.body);
  if (node.type === 'sequence') {
    for (const item of node.items) {
      if (item.type === 'assertion' && item.kind === 'start') return true;
      if (item.type !== 'assertion') return false;
    }
  }
  return false;
}

/** The literal characters right at the start of every match (after leading assertions). */
function leadingLiteral(node: RegexNode): string {
  if (node.type === 'char') return String.fromCodePoint(node.code);
  if (node.type === 'group') return leadingLiteral(node.body);
  if (node.type !== 'sequence') return '';
  let run = '';
  for (const item of node.items) {
    if (item.type === 'assertion') {
      if (run) break;
      continue;
    }
    if (item.type !== 'char') {
      // A group or a required repeat may still begin with literal characters, but the run ends there.
      if (!run && item.type === 'group') return leadingLiteral(item);
      break;
    }
    run += String.fromCodePoint(item.code);
  }
  return run;
}

function longest(strings: string[]): string {
  let best = '';
  for (const s of strings) if (s.length > best.length) best = s;
  return best;
}
