import { oneParameter, type PredicateDefinition, type StringList } from '../compile/parameters.js';
import type { EvaluationScope, PredicateFunction } from '../runtime/evaluation-scope.js';
import { normalizePattern, normalizeSlashes, PrefixMatcher } from './path-matching.js';
import { PathTemplate, PathTemplateError } from './path-template.js';

/** Builds a matcher once when the list is fixed, or per evaluation when it holds @user values. */
function withList<T>(list: StringList, build: (values: readonly string[]) => T, use: (matcher: T, scope: EvaluationScope) => boolean): PredicateFunction {
  if (list.fixed !== undefined) {
    const matcher = build(list.fixed);
    return (scope) => use(matcher, scope);
  }
  return (scope) => use(build(list.resolve(scope)), scope);
}

/** `path`: exact match of the relative path against any value, both sides slash-normalized. */
export const pathPredicate: PredicateDefinition = {
  ...oneParameter('path', 'path', 'string[]'),
  build: (args) =>
    withList(
      args.list('path'),
      (paths) => new Set(paths.map(normalizePattern)),
      (set, scope) => set.has(normalizeSlashes(scope.view.relativePath)),
    ),
};

/** `path-prefix`: prefix on a segment boundary; binds `${remaining}`. */
export const pathPrefixPredicate: PredicateDefinition = {
  ...oneParameter('path-prefix', 'path', 'string[]'),
  build: (args, context) =>
    withList(
      args.list('path'),
      (paths) => new PrefixMatcher(paths),
      (matcher, scope) => {
        const remaining = matcher.match(scope.view.relativePath);
        if (remaining === undefined) return false;
        if (context.bindingsRead) scope.bind('remaining', remaining);
        return true;
      },
    ),
};

/** `path-suffix`: the relative path ends with any value (no normalization). */
export const pathSuffixPredicate: PredicateDefinition = {
  ...oneParameter('path-suffix', 'path', 'string[]'),
  build: (args) =>
    withList(
      args.list('path'),
      (suffixes) => suffixes,
      (suffixes, scope) => {
        const path = scope.view.relativePath;
        for (const suffix of suffixes) if (path.endsWith(suffix)) return true;
        return false;
      },
    ),
};

/** `path-template`: `/users/{id}` against `%R` (or `match=`), binding `${id}` on success. */
export const pathTemplatePredicate: PredicateDefinition = {
  name: 'path-template',
  parameters: { value: 'string', match: 'attribute' },
  defaultParameter: 'value',
  required: ['value'],
  build: (args, context) => {
    let template: PathTemplate;
    try {
      template = new PathTemplate(args.string('value'));
    } catch (error) {
      if (error instanceof PathTemplateError) throw context.error(error.message, 'value', error.offset);
      throw error;
    }
    const match = args.optionalAttribute('match');
    const read = match === undefined ? (scope: EvaluationScope) => scope.view.relativePath : match.read;
    if (!context.bindingsRead) {
      return (scope) => {
        const path = read(scope);
        return path !== null && template.match(path);
      };
    }
    return (scope) => {
      const path = read(scope);
      if (path === null) return false;
      const bound = new Map<string, string>();
      if (!template.match(path, bound)) return false;
      for (const [name, value] of bound) scope.bind(name, value);
      return true;
    };
  },
};
