import type { PredicateDefinition, StringList } from '../compile/parameters.js';
import type { EvaluationScope } from '../runtime/evaluation-scope.js';

/** RESTHeart's builders refuse an empty list for these (`{}`), at build time. */
function nonEmptyList(list: StringList, error: () => Error): StringList {
  if (list.fixed !== undefined && list.fixed.length === 0) throw error();
  return list;
}

const names = (scope: EvaluationScope) => scope.view.queryParameters;

/** `qparams-contain`: every listed query parameter is present (with any value, even empty). */
export const queryParametersContainPredicate: PredicateDefinition = {
  name: 'qparams-contain',
  parameters: { qparams: 'string[]' },
  defaultParameter: 'qparams',
  required: ['qparams'],
  build: (args, context) => {
    const list = nonEmptyList(args.list('qparams'), () => context.error('needs at least one query parameter name', 'qparams'));
    return (scope) => {
      const present = names(scope);
      for (const name of list.resolve(scope)) if (!present.has(name)) return false;
      return true;
    };
  },
};

/** `qparams-blacklist`: none of the listed query parameters is present. */
export const queryParametersBlacklistPredicate: PredicateDefinition = {
  name: 'qparams-blacklist',
  parameters: { blacklist: 'string[]' },
  defaultParameter: 'blacklist',
  required: ['blacklist'],
  build: (args, context) => {
    const list = nonEmptyList(args.list('blacklist'), () => context.error('needs at least one query parameter name', 'blacklist'));
    return (scope) => {
      const present = names(scope);
      for (const name of list.resolve(scope)) if (present.has(name)) return false;
      return true;
    };
  },
};

/** `qparams-whitelist`: only listed parameters are present; with no list, no parameter at all. */
export const queryParametersWhitelistPredicate: PredicateDefinition = {
  name: 'qparams-whitelist',
  parameters: { whitelist: 'string[]' },
  defaultParameter: 'whitelist',
  required: [],
  build: (args) => {
    const list = args.optionalList('whitelist');
    return (scope) => {
      const present = names(scope);
      const allowed = list?.resolve(scope) ?? [];
      if (allowed.length === 0) return present.size === 0;
      for (const name of present.keys()) if (!allowed.includes(name)) return false;
      return true;
    };
  },
};

/** `qparams-size`: exactly this many distinct query parameter names. */
export const queryParametersSizePredicate: PredicateDefinition = {
  name: 'qparams-size',
  parameters: { size: 'integer' },
  defaultParameter: 'size',
  required: ['size'],
  build: (args) => {
    const size = args.number('size');
    return (scope) => names(scope).size === size;
  },
};
