/**
 * What one regex evaluation may cost. V8's linear-time engine simulates the pattern's NFA: each
 * input character costs up to one step per character position of the pattern (a `[a-z]`, a
 * literal, a `.`), and a step costs tens of nanoseconds, more on inputs past a few KiB. So a
 * large alternation under a star against a long header blocks the event loop for seconds while
 * staying "linear". The bound is the product:
 *
 * - every pattern gets a cost of `positions × input characters` of at most REGEX_COST_BUDGET
 *   (a few ms on an idle core; docs/decisions.md "Input limits" has the figures);
 * - at write, a pattern is refused when it cannot afford REGEX_MIN_INPUT_CHARS characters, with
 *   a message naming its heaviest part;
 * - at evaluation, an input longer than the pattern affords (`maxInputChars`, at most
 *   REGEX_MAX_INPUT_CHARS) does not reach the engine and does not match.
 */
import { emitJavaScript } from './javascript-emitter.js';
import { RegexSyntaxError, type ParsedRegex, type RegexNode } from './java-regex-syntax.js';

/** Pattern positions × input characters allowed for one evaluation. */
export const REGEX_COST_BUDGET = 25_000;
/** Every accepted pattern can be run on inputs at least this long (paths, ordinary headers). */
export const REGEX_MIN_INPUT_CHARS = 128;
/** No input longer than this reaches the engine, whatever the pattern (its cost grows faster than linearly past a few KiB). */
export const REGEX_MAX_INPUT_CHARS = 2048;
/** The largest pattern, in character positions, that still affords REGEX_MIN_INPUT_CHARS. */
export const REGEX_MAX_POSITIONS = Math.floor(REGEX_COST_BUDGET / REGEX_MIN_INPUT_CHARS);

/** Character positions of a node once translated (counted repetition is unrolled by the engine). */
function positions(node: RegexNode): number {
  switch (node.type) {
    case 'alternation':
      return node.options.reduce((sum, option) => sum + positions(option), 0);
    case 'sequence':
      return node.items.reduce((sum, item) => sum + positions(item), 0);
    case 'group':
      return positions(node.body);
    case 'repeat': {
      const copies = node.max === Infinity ? Math.max(1, node.min) : Math.max(1, node.max);
      return positions(node.body) * copies;
    }
    case 'assertion':
      return 0;
    default:
      return 1;
  }
}

/** The alternation or repetition that weighs most, for the refusal message. */
function heaviestPart(node: RegexNode): { node: RegexNode; weight: number } | undefined {
  let best: { node: RegexNode; weight: number } | undefined;
  const visit = (n: RegexNode) => {
    if (n.type === 'alternation' || n.type === 'repeat') {
      const weight = positions(n);
      if (!best || weight > best.weight) best = { node: n, weight };
    }
    if (n.type === 'alternation') n.options.forEach(visit);
    else if (n.type === 'sequence') n.items.forEach(visit);
    else if (n.type === 'group' || n.type === 'repeat') visit(n.body);
  };
  visit(node);
  return best;
}

/**
 * The longest input this pattern may run on, or throws RegexSyntaxError naming the part that
 * makes it too costly. The parse tree's depth is bounded by the parser, so the walks are too.
 */
export function regexInputBound(parsed: ParsedRegex): number {
  const total = positions(parsed.root);
  if (total > REGEX_MAX_POSITIONS) {
    const part = heaviestPart(parsed.root);
    let where = '';
    if (part) {
      const text = emitJavaScript({ ...parsed, root: part.node }, false);
      where = ` ${text.length > 60 ? `${text.slice(0, 57)}…` : text} alone has ${part.weight};`;
    }
    throw new RegexSyntaxError(
      0,
      `the pattern is too costly to run on every request: it has ${total} character positions (the translated form, {n,m} unrolled);${where} ` +
        `at most ${REGEX_MAX_POSITIONS} are allowed, so that a ${REGEX_MIN_INPUT_CHARS}-character input stays within the cost budget of ${REGEX_COST_BUDGET} position×characters. ` +
        'Use fewer alternatives or a shorter {n,m}, or several conditions',
    );
  }
  return Math.min(REGEX_MAX_INPUT_CHARS, Math.floor(REGEX_COST_BUDGET / Math.max(1, total)));
}
