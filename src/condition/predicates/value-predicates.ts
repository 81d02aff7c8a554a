import { oneParameter, type PredicateDefinition } from '../compile/parameters.js';

/** `equals`: every attribute reads the same string; null equals only null; fewer than two: true. */
export const equalsPredicate: PredicateDefinition = {
  ...oneParameter('equals', 'value', 'attribute[]'),
  build: (args) => {
    const readers = args.attributes('value').map((attribute) => attribute.read);
    if (readers.length < 2) return () => true;
    return (scope) => {
      const first = readers[0]!(scope);
      for (let i = 1; i < readers.length; i++) {
        if (readers[i]!(scope) !== first) return false;
      }
      return true;
    };
  },
};

/** `contains`: the attribute is present and contains any of the search strings. */
export const containsPredicate: PredicateDefinition = {
  name: 'contains',
  parameters: { value: 'attribute', search: 'string[]' },
  required: ['value', 'search'],
  build: (args) => {
    const read = args.attribute('value').read;
    const search = args.list('search');
    return (scope) => {
      const value = read(scope);
      if (value === null) return false;
      for (const text of search.resolve(scope)) if (value.includes(text)) return true;
      return false;
    };
  },
};

/** `exists`: the attribute is present and not empty (`?debug=` does not exist). */
export const existsPredicate: PredicateDefinition = {
  ...oneParameter('exists', 'value', 'attribute'),
  build: (args) => {
    const read = args.attribute('value').read;
    return (scope) => {
      const value = read(scope);
      return value !== null && value.length > 0;
    };
  },
};

/**
 * RESTHeart's `in`: the attribute equals one of the array's values. (RESTHeart throws when the
 * attribute is absent; here an absent value is simply in no array.)
 */
export const inPredicate: PredicateDefinition = {
  name: 'in',
  parameters: { value: 'attribute', array: 'string[]' },
  required: ['value', 'array'],
  build: (args) => {
    const read = args.attribute('value').read;
    const array = args.list('array');
    const fixed = array.fixed === undefined ? undefined : new Set(array.fixed);
    return (scope) => {
      const value = read(scope);
      if (value === null) return false;
      return fixed !== undefined ? fixed.has(value) : array.resolve(scope).includes(value);
    };
  },
};

/** Java's `Double.parseDouble` syntax, which RESTHeart's numeric comparisons use. */
const JAVA_DOUBLE = /^[+-]?(?:NaN|Infinity|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?[fFdD]?)$/;

function parseJavaDouble(text: string | null): number | undefined {
  if (text === null) return undefined;
  const trimmed = text.trim();
  if (trimmed.length === 0 || !JAVA_DOUBLE.test(trimmed)) return undefined;
  return Number(trimmed.replace(/[fFdD]$/, ''));
}

/**
 * RESTHeart's `gte` / `lte`: exactly two attributes, compared as numbers; a side that is not a
 * number makes the predicate false, never true.
 */
function numericComparison(name: string, compare: (left: number, right: number) => boolean): PredicateDefinition {
  return {
    ...oneParameter(name, 'value', 'attribute[]'),
    build: (args, context) => {
      const values = args.attributes('value');
      if (values.length !== 2) throw context.error(`compares exactly two values, got ${values.length}`, 'value');
      const [left, right] = [values[0]!.read, values[1]!.read];
      return (scope) => {
        const a = parseJavaDouble(left(scope));
        const b = parseJavaDouble(right(scope));
        return a !== undefined && b !== undefined && compare(a, b);
      };
    },
  };
}

export const gtePredicate = numericComparison('gte', (a, b) => a >= b);
export const ltePredicate = numericComparison('lte', (a, b) => a <= b);
