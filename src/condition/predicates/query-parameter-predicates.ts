import { nonEmptyList, oneParameter, type PredicateDefinition } from '../compile/parameters.js';
import type { EvaluationScope } from '../runtime/evaluation-scope.js';

const names = (scope: EvaluationScope) => scope.view.queryParameters;

/** `qparams-contain`: every listed query parameter is present (with any value, even empty). */
export const queryParametersContainPredicate: PredicateDefinition = {
  ...oneParameter('qparams-contain', 'qparams', 'string[]'),
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
  ...oneParameter('qparams-blacklist', 'blacklist', 'string[]'),
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
  ...oneParameter('qparams-whitelist', 'whitelist', 'string[]'),
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
  ...oneParameter('qparams-size', 'size', 'integer'),
  build: (args) => {
    const size = args.number('size');
    return (scope) => names(scope).size === size;
  },
};
