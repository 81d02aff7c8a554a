import { setFlagsFromString } from 'node:v8';
import { emitJavaScript } from './javascript-emitter.js';
import { parseJavaRegex } from './java-regex-parser.js';
import { RegexSyntaxError } from './java-regex-syntax.js';
import { regexInputBound } from './regex-cost.js';
import { requiredLiteral, type RequiredLiteral } from './required-literal.js';

/**
 * Why V8's linear-time engine: a regex written into a permission or a webhook runs on every
 * proxied request, against input the client controls (path, headers, query). A backtracking
 * engine lets `(a+)+$` take exponential time on a crafted input and stall the event loop for
 * every client. V8 ships a second, non-backtracking engine (an NFA simulation, O(pattern ×
 * input)) behind `--enable-experimental-regexp-engine`; with it, the `l` flag makes a RegExp
 * that can never backtrack, and V8 refuses at construction any pattern it cannot run that way.
 * So the guarantee is structural (checked once, when the condition is parsed) rather than a
 * heuristic like a static "nested quantifier" check, and needs no native add-on.
 *
 * The flag only makes the `l` flag available; no other RegExp in the process changes. It exists
 * in Node 20 (V8 11.3) and in current V8 (Node 22, 24) with the same limits, which the
 * translator enforces itself where it matters: no `i`/`u` flags (case folding is spelled out),
 * no backreferences, no lookaround, counted repetition above 16 unrolled.
 */
let engineAvailable: boolean | undefined;

export function linearEngineAvailable(): boolean {
  if (engineAvailable === undefined) {
    engineAvailable = canCompileLinear();
    if (!engineAvailable) {
      setFlagsFromString('--enable-experimental-regexp-engine');
      engineAvailable = canCompileLinear();
    }
  }
  return engineAvailable;
}

/** The `l` flag is unknown to linters and to V8 until the engine flag is set. */
const LINEAR_FLAG = 'l';

function canCompileLinear(): boolean {
  try {
    new RegExp('a', LINEAR_FLAG);
    return true;
  } catch {
    return false;
  }
}

export interface CompiledRegex {
  /** Never global or sticky, so `exec`/`test` keep no state between requests. */
  readonly regex: RegExp;
  /** Number of capturing groups, bound as `${1}`... after a match (`${0}` is the whole match). */
  readonly captureCount: number;
  /** What every match contains: an input without it cannot match, and the engine need not run. */
  readonly required: RequiredLiteral;
  /** Longer inputs do not reach the engine and do not match (regex-cost.ts). */
  readonly maxInputChars: number;
}

export interface RegexOptions {
  readonly caseSensitive: boolean;
  /** Java's `matches()` (the whole input) rather than `find()`. */
  readonly fullMatch: boolean;
}

/** Compiles a user's Java-syntax pattern for the linear-time engine, or throws RegexSyntaxError. */
export function compileUserRegex(pattern: string, options: RegexOptions): CompiledRegex {
  const parsed = parseJavaRegex(pattern, !options.caseSensitive);
  if (options.fullMatch && parsed.flags.multiline) {
    throw new RegexSyntaxError(0, '(?m) cannot be combined with full-match=true');
  }
  const source = emitJavaScript(parsed, options.fullMatch);
  const maxInputChars = regexInputBound(parsed);
  if (!linearEngineAvailable()) {
    throw new RegexSyntaxError(0, 'this Node.js runtime has no linear-time regex engine, so regex conditions are refused rather than run unsafely');
  }
  let regex: RegExp;
  try {
    regex = new RegExp(source, parsed.flags.multiline ? `m${LINEAR_FLAG}` : LINEAR_FLAG);
  } catch (error) {
    throw new RegexSyntaxError(0, `the pattern cannot run in linear time (${(error as Error).message}); simplify it`);
  }
  return { regex, captureCount: parsed.captureCount, required: requiredLiteral(parsed, options.fullMatch), maxInputChars };
}
