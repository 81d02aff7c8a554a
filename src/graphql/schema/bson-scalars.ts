/**
 * The BSON scalars RESTHeart declares in front of every app schema (`ObjectId`, `DateTime`, ...),
 * and the coercion rules of every custom scalar. Output values pass through as the backend sent
 * them (extended JSON). Input values become extended-JSON literals the backend understands; a
 * free-form scalar (`BsonDocument`, or any `scalar JSON` an app declares) refuses objects holding
 * a key that starts with `$`, so a client cannot inject query operators into a `find`.
 */
import { GraphQLError, GraphQLScalarType, Kind, valueFromASTUntyped, type ValueNode } from 'graphql';
import { isPlainObject } from '../../util/objects.js';
import { findOperatorKey } from '../values/ejson.js';

export const BSON_SCALAR_NAMES = ['ObjectId', 'Decimal128', 'Timestamp', 'BsonDocument', 'DateTime', 'Regex', 'Long'] as const;

type Parser = (value: unknown) => unknown;

const HEX24 = /^[0-9a-fA-F]{24}$/;

function invalid(scalar: string, message: string): GraphQLError {
  return new GraphQLError(`${scalar} cannot represent the value: ${message}`);
}

const parseObjectId: Parser = (value) => {
  const hex = isPlainObject(value) && Object.keys(value).length === 1 ? value.$oid : value;
  if (typeof hex === 'string' && HEX24.test(hex)) return { $oid: hex.toLowerCase() };
  throw invalid('ObjectId', 'expected a string of 24 hexadecimal digits');
};

const parseDateTime: Parser = (value) => {
  let ms: number | undefined;
  if (typeof value === 'number' && Number.isFinite(value)) ms = value;
  else if (typeof value === 'string' && /^-?\d+$/.test(value)) ms = Number(value);
  else if (typeof value === 'string') {
    // ISO 8601 with a date and, when a time is given, an offset or Z.
    if (/^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2}))?$/.test(value)) ms = Date.parse(value);
  } else if (isPlainObject(value) && Object.keys(value).length === 1 && '$date' in value) {
    const d = value.$date;
    if (typeof d === 'number') ms = d;
    else if (typeof d === 'string') ms = Date.parse(d);
  }
  if (ms === undefined || !Number.isFinite(ms)) {
    throw invalid('DateTime', 'expected an ISO-8601 date-time with offset (2024-05-01T10:00:00Z) or epoch milliseconds');
  }
  return { $date: ms };
};

const parseLong: Parser = (value) => {
  const text = typeof value === 'number' ? (Number.isInteger(value) ? String(value) : '') : typeof value === 'string' ? value : '';
  if (!/^-?\d{1,19}$/.test(text)) throw invalid('Long', 'expected an integer');
  const big = BigInt(text);
  if (big > 9223372036854775807n || big < -9223372036854775808n) throw invalid('Long', 'out of the 64-bit range');
  const n = Number(text);
  return Number.isSafeInteger(n) ? n : { $numberLong: text };
};

const parseDecimal: Parser = (value) => {
  const text = typeof value === 'number' ? String(value) : typeof value === 'string' ? value : '';
  if (!/^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$/.test(text)) throw invalid('Decimal128', 'expected a decimal number');
  return { $numberDecimal: text };
};

const parseTimestamp: Parser = (value) => {
  if (isPlainObject(value) && Object.keys(value).length === 1 && isPlainObject(value.$timestamp)) {
    const { t, i } = value.$timestamp;
    if (Number.isInteger(t) && Number.isInteger(i) && Object.keys(value.$timestamp).length === 2) return { $timestamp: { t, i } };
  }
  throw invalid('Timestamp', 'expected {"$timestamp": {"t": <seconds>, "i": <increment>}}');
};

const parseRegex: Parser = (value) => {
  if (typeof value === 'string') return { $regularExpression: { pattern: value, options: '' } };
  throw invalid('Regex', 'expected a string');
};

/** Free-form values: anything JSON, but never an operator (`$`-key outside an extended-JSON literal). */
function freeForm(scalar: string): Parser {
  return (value) => {
    const hit = findOperatorKey(value);
    if (hit !== undefined) {
      throw new GraphQLError(`${scalar} value refused: "${hit}" looks like a query operator; argument values are literal values and may not hold keys starting with "$"`, {
        extensions: { code: 'OPERATOR_INJECTION' },
      });
    }
    return value;
  };
}

/** Literals in the query itself: scalars arrive as strings, numbers or objects. */
function literalParser(parse: Parser) {
  return (node: ValueNode, variables?: Record<string, unknown> | null) => {
    if (node.kind === Kind.INT || node.kind === Kind.FLOAT) return parse(Number(node.value));
    return parse(valueFromASTUntyped(node, variables));
  };
}

const PARSERS: Record<string, Parser> = {
  ObjectId: parseObjectId,
  DateTime: parseDateTime,
  Long: parseLong,
  Decimal128: parseDecimal,
  Timestamp: parseTimestamp,
  Regex: parseRegex,
};

/** Output: pass extended JSON through; `Long` as a plain number when it fits (RESTHeart's relaxed mode). */
function serializerFor(name: string) {
  if (name === 'Long') {
    return (value: unknown) => {
      if (isPlainObject(value) && typeof value.$numberLong === 'string') {
        const n = Number(value.$numberLong);
        return Number.isSafeInteger(n) ? n : value;
      }
      return value;
    };
  }
  if (name === 'ObjectId') {
    return (value: unknown) => (typeof value === 'string' && HEX24.test(value) ? { $oid: value } : value);
  }
  return (value: unknown) => {
    if (value === undefined || typeof value === 'function' || typeof value === 'symbol') {
      throw new GraphQLError(`${name} cannot represent this value`);
    }
    return value;
  };
}

/**
 * Installs coercion on a scalar built from SDL: the BSON rules for the BSON names, free-form with
 * the operator guard for every other custom scalar.
 */
export function installScalarCoercion(scalar: GraphQLScalarType): void {
  const parse = PARSERS[scalar.name] ?? freeForm(scalar.name);
  scalar.parseValue = parse;
  scalar.parseLiteral = literalParser(parse);
  scalar.serialize = serializerFor(scalar.name);
}
