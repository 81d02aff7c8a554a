import { nonEmptyList, oneParameter, type PredicateDefinition } from '../compile/parameters.js';
import type { EvaluationScope } from '../runtime/evaluation-scope.js';

const names = (scope: EvaluationScope) => scope.view.queryParameters;

/**
 * `qparams-contain` (every listed query parameter is present, with any value, even empty) and
 * `qparams-blacklist` (none of them is): the same walk, wanting each name present or absent.
 */
function listedParameters(name: string, parameter: string, wantPresent: boolean): PredicateDefinition {
  return {
    ...oneParameter(name, parameter, 'string[]'),
    build: (args, context) => {
      const list = nonEmptyList(args.list(parameter), () => context.error('needs at least one query parameter name', parameter));
      return (scope) => {
        const present = names(scope);
        for (const listed of list.resolve(scope)) if (present.has(listed) !== wantPresent) return false;
        return true;
      };
    },
  };
}

export const queryParametersContainPredicate = listedParameters('qparams-contain', 'qparams', true);
export const queryParametersBlacklistPredicate = listedParameters('qparams-blacklist', 'blacklist', false);

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
