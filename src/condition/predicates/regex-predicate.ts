import type { PredicateDefinition } from '../compile/parameters.js';
import { compileUserRegex, type CompiledRegex } from '../regex/linear-regex.js';
import { RegexSyntaxError } from '../regex/java-regex-syntax.js';
import type { EvaluationScope } from '../runtime/evaluation-scope.js';

/**
 * `regex`: Java-syntax pattern against `%R` (or `value=`); `find()` unless `full-match=true`;
 * on a match the groups are bound as `${0}`, `${1}`... (a group that did not take part reads
 * null). Compiled once, for V8's linear-time engine (see regex/linear-regex.ts). An input longer
 * than the pattern's cost bound allows (regex/regex-cost.ts) does not match.
 */
export const regexPredicate: PredicateDefinition = {
  name: 'regex',
  parameters: { pattern: 'string', value: 'attribute', 'full-match': 'boolean', 'case-sensitive': 'boolean' },
  defaultParameter: 'pattern',
  required: ['pattern'],
  build: (args, context) => {
    let compiled: CompiledRegex;
    try {
      compiled = compileUserRegex(args.string('pattern'), {
        caseSensitive: args.boolean('case-sensitive', true),
        fullMatch: args.boolean('full-match', false),
      });
    } catch (error) {
      if (error instanceof RegexSyntaxError) throw context.error(`invalid pattern: ${error.message}`, 'pattern', error.offset);
      throw error;
    }
    const { regex, captureCount, maxInputChars } = compiled;
    const { prefix, contains } = compiled.required;
    // The linear-time engine is slow next to a string search: inputs that lack what every match contains stop here,
    // and so do inputs too long for this pattern's cost bound.
    const mayMatch = (input: string) => input.length <= maxInputChars && (prefix === undefined || input.startsWith(prefix)) && (contains === undefined || input.includes(contains));
    const value = args.optionalAttribute('value');
    const read = value === undefined ? (scope: EvaluationScope) => scope.view.relativePath : value.read;
    if (!context.bindingsRead) {
      return (scope) => {
        const input = read(scope);
        return input !== null && mayMatch(input) && regex.test(input);
      };
    }
    return (scope) => {
      const input = read(scope);
      if (input === null || !mayMatch(input)) return false;
      const match = regex.exec(input);
      if (match === null) return false;
      for (let group = 0; group <= captureCount; group++) scope.bind(String(group), match[group] ?? null);
      return true;
    };
  },
};
