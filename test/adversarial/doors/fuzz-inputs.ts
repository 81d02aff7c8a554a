/**
 * A seeded generator of bad input for the fuzz run: the same seed gives the same requests, so a
 * failure found once can be replayed. Every URL it writes is on loopback (webhook targets, test
 * sends), so nothing generated can send a packet elsewhere.
 */
import type { Door } from './doors.js';
import { MAX_DOCUMENT_BODY_BYTES } from '../../../src/input-limits/limits.js';

export interface FuzzRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: string | Buffer;
  /** What kind of bad input this is (for the report). */
  kind: string;
  /** Larger than every body limit: the server may answer and close before reading it all. */
  oversized?: boolean;
}

export class Rng {
  private state: number;
  constructor(seed: number) {
    this.state = seed >>> 0 || 1;
  }
  /** mulberry32 */
  next(): number {
    let t = (this.state = (this.state + 0x6d2b79f5) >>> 0);
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }
  pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.next() * items.length)]!;
  }
  chance(p: number): boolean {
    return this.next() < p;
  }
  /** A depth skewed towards the interesting region around the bounds (64, 100) and far past them. */
  depth(): number {
    return this.pick([this.int(1, 10), this.int(60, 130), this.int(500, 3000), this.int(5000, 30000)]);
  }
}

/** encodeURIComponent that never throws (lone surrogates become U+FFFD, as UTF-8 would). */
function enc(s: string): string {
  return encodeURIComponent(Buffer.from(s, 'utf8').toString('utf8'));
}

const PRINTABLE = "!$&'()*+,-.0123456789:;=@ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz~";

function text(r: Rng, max = 40): string {
  const pool = [
    () => r.pick(['', 'a', 'x1', '__proto__', 'constructor', 'null', 'true', '..', '.', '%', '$', '{{', '}}', '\\', '"', "'", '\u0000', '\u2028', '\ud800', '😀', 'é', '€']),
    () => Array.from({ length: r.int(1, max) }, () => String.fromCharCode(r.int(0, 0x2fff))).join(''),
    () => Array.from({ length: r.int(1, max) }, () => r.pick([...PRINTABLE])).join(''),
    () => 'a'.repeat(r.pick([100, 1000, 70_000])),
  ];
  return r.pick(pool)();
}

function deepJson(r: Rng, depth = r.depth()): string {
  const shape = r.int(0, 3);
  if (shape === 0) return '['.repeat(depth) + ']'.repeat(depth);
  if (shape === 1) return '{"a":'.repeat(depth) + '1' + '}'.repeat(depth);
  if (shape === 2) return '[{"x":'.repeat(depth) + 'null' + '}]'.repeat(depth);
  // Unbalanced: opens without closes.
  return '['.repeat(depth);
}

/** A random JSON value (as a value, not text), bounded in size, possibly deep. */
function value(r: Rng, budget = 6): unknown {
  if (budget <= 0 || r.chance(0.35)) {
    return r.pick<() => unknown>([
      () => text(r),
      () => r.pick([0, -1, 1.5, 1e308, -0, 2 ** 53 + 1, Number.MAX_SAFE_INTEGER]),
      () => r.pick([true, false, null]),
      () => ({ $oid: text(r, 30) }),
      () => ({ $date: text(r, 10) }),
      () => ({ $fk: text(r, 10) }),
      () => ({ $arg: text(r, 10) }),
    ])();
  }
  if (r.chance(0.5)) return Array.from({ length: r.int(0, 4) }, () => value(r, budget - 1));
  const out: Record<string, unknown> = {};
  for (let i = r.int(0, 4); i > 0; i--) Object.defineProperty(out, text(r, 12), { value: value(r, budget - 1), enumerable: true, writable: true, configurable: true });
  return out;
}

/** A document whose some field holds `marker`, replaced afterwards by raw text (deep JSON, bad numbers...). */
function withRaw(doc: unknown, raw: string): string {
  const marker = '"__RAW__"';
  return JSON.stringify(doc).replace(marker, raw);
}

// ------------------------------------------------------------------------------------------------
// Predicates, regexes, templates, GraphQL documents

const PREDICATE_ATOMS = [
  "path('/a')",
  "path-prefix('/api')",
  'method(POST)',
  'true',
  'false',
  "equals('%{i,X}', 'a')",
  "regex('^/a')",
  "regex(pattern='[a-z]+', value='%{i,User-Agent}')",
  "contains(value='%U', search='x')",
  'exists(%{i,X})',
  "path-template('/a/{id}')",
  "bson-request-prop-equals(key=a.b, value='1')",
  "in(value='%m', array={'GET','POST'})",
  "ip-match('127.0.0.1/8')",
  '${1}',
  '%{q,a}',
  '@user.id',
];
const REGEX_FRAGMENTS = [
  '(?<=a)',
  '(?!a)',
  '\\1',
  'a{999999}',
  'a{2,1}',
  '[z-a]',
  '\\p{L}',
  '(?i)',
  '(?m)x$',
  '(',
  ')',
  '[',
  '\\',
  'a++',
  '(a*)*',
  '(?<n>x)',
  '\\Q..\\E',
  '{',
  'x{16}{16}{16}',
  '.*.*.*',
  '(?:a|b|c|d|e|f|g|h)*',
  '\\uZZZZ',
  '\u0000',
  '😀',
];

export function fuzzRegex(r: Rng): string {
  if (r.chance(0.2)) return `(?:${Array.from({ length: r.int(20, 600) }, (_, i) => `w${i}x`).join('|')})*z`;
  if (r.chance(0.1)) return '('.repeat(r.depth()) + 'a' + ')'.repeat(r.int(0, 50));
  return Array.from({ length: r.int(1, 6) }, () => (r.chance(0.6) ? r.pick(REGEX_FRAGMENTS) : text(r, 8))).join('');
}

export function fuzzPredicate(r: Rng): string {
  const kind = r.int(0, 7);
  if (kind === 0) return '('.repeat(r.depth()) + 'true' + ')'.repeat(r.int(0, 3) === 0 ? 0 : 3000);
  if (kind === 1) return 'not '.repeat(r.depth()) + 'true';
  if (kind === 2) return Array.from({ length: r.int(100, 5000) }, () => 'true').join(r.pick([' and ', ' or ']));
  if (kind === 3) return `regex(pattern='${fuzzRegex(r).replace(/'/g, "\\'")}', value='%{i,X}')`;
  if (kind === 4) return text(r, 60);
  const parts: string[] = [];
  for (let i = r.int(1, 8); i > 0; i--) parts.push(r.chance(0.7) ? r.pick(PREDICATE_ATOMS) : r.pick(['and', 'or', 'not', '(', ')', ',', '=', "'", '{', '}', text(r, 6)]));
  return parts.join(' ');
}

export function fuzzTemplate(r: Rng): string {
  const kind = r.int(0, 6);
  const n = r.depth();
  if (kind === 0) return '{{#request.body}}'.repeat(n) + 'x' + '{{/request.body}}'.repeat(n);
  if (kind === 1) return '{{#a}}'.repeat(r.int(1, 5));
  if (kind === 2) return '{{> partial}}';
  if (kind === 3) return '{{{request.body}}}'.repeat(r.int(1, 2000));
  if (kind === 4) return `{{=${text(r, 3)} ${text(r, 3)}=}}`;
  if (kind === 5) return `{"a": {{request.headers.${text(r, 10)}}}, "b": {{{response.body}}}}`;
  return text(r, 200);
}

export function fuzzGraphql(r: Rng): string {
  const n = r.depth();
  return r.pick<() => string>([
    () => `{ orders ${'{ a '.repeat(n)}${'}'.repeat(n)} }`,
    () => `{ orders(status: ${'['.repeat(n)}${']'.repeat(n)}) { number } }`,
    () => `{ orders(status: ${'{a:'.repeat(n)}1${'}'.repeat(n)}) { number } }`,
    () => `query Q(${'$a: ['.repeat(Math.min(n, 3000))}String${']'.repeat(Math.min(n, 3000))}) { orders { number } }`,
    () => 'mutation { orders { number } }',
    () => 'subscription { orders { number } }',
    () => 'fragment A on Query { ...A } { ...A }',
    () => `{ ${Array.from({ length: r.int(10, 5000) }, (_, i) => `a${i}: orders { number }`).join(' ')} }`,
    () => `{ orders(status: "${'\\u'.repeat(r.int(1, 10))}") { number } }`,
    () => `"""${'"'.repeat(r.int(0, 5))}`,
    () => '{'.repeat(n),
    () => `#${'a'.repeat(100)}\n{ __schema { types { name fields { name type { ofType { ofType { ofType { name } } } } } } } }`,
    () => `{ orders(limit: ${r.pick(['-1', '1e999', '99999999999', '"x"', 'null', '$undefined'])}) { number } }`,
    // Issue 25: output far larger than what is read (aliases, fragments spread many times, a
    // variable's default as the limit, fragment fan-out).
    () => `{ orders(limit: 1000) { ${Array.from({ length: r.int(50, 11_000) }, (_, i) => `a${i}: ${r.chance(0.5) ? 'number' : 'status'}`).join(' ')} } }`,
    () => `fragment F on Order { ${Array.from({ length: r.int(1, 60) }, (_, i) => `a${i}: number`).join(' ')} } { orders(limit: 1000) { ${'...F '.repeat(r.int(1, 500))} } }`,
    () => `query($l: Int = ${r.pick(['1000', '0', '-1', '"x"', 'null', '99999999999'])}) { ${Array.from({ length: r.int(1, 60) }, (_, i) => `o${i}: orders(limit: $l) { number }`).join(' ')} }`,
    () => {
      const k = r.int(5, 40);
      return `${Array.from({ length: k }, (_, i) => `fragment F${i + 1} on Order { ...F${i} ...F${i} }`).join(' ')} fragment F0 on Order { number status } { orders { ...F${k} } }`;
    },
    () => text(r, 200),
  ])();
}

/** Mutations against the fuzz app's Mutation type (issue 27): injected operators, bulk sizes, deep inputs, fan-out. */
export function fuzzMutation(r: Rng): string {
  const n = r.depth();
  // Issue 34: dot segments (alone, with path parameters, encoded) and nulls, as ids and inside input objects.
  const id = r.pick([
    '"0000000000000000000000aa"',
    '"*"',
    '"_null"',
    '""',
    '"a/b"',
    '1',
    'null',
    JSON.stringify(text(r, 30)),
    '".."',
    '"."',
    '"..;x"',
    '".;x"',
    '"..;"',
    '"a;b"',
    '"%2e%2e"',
    '"..\\\\x"',
    '"../orders"',
  ]);
  return r.pick<() => string>([
    () => `mutation { addOrder(number: ${r.pick(['1', '-1', '1e999', '"x"', 'null'])}, status: ${JSON.stringify(text(r, 40))}) }`,
    () => `mutation { setStatus(id: ${id}, status: "x") }`,
    () =>
      `mutation { edit(id: ${id}, changes: ${r.pick(['{$where: "1"}', '{a: {$set: {b: 1}}}', '{"a.b": 1}', `${'{a: '.repeat(n)}1${'}'.repeat(n)}`, '{$expr: {$eq: [1, 1]}}', '{__proto__: {x: 1}}', '[]'])}) }`,
    () => `mutation($d: BsonDocument) { edit(id: ${id}, changes: $d) purge(filter: $d) }`,
    () => `mutation { purge(filter: ${r.pick(['{$ne: null}', '{}', '{status: {$function: {body: "x"}}}', '{"status.x": 1}', 'null'])}) }`,
    () => `mutation { bulk(orders: [${Array.from({ length: r.int(0, 3000) }, (_, i) => `{number: ${i}}`).join(',')}]) }`,
    () => `mutation { ${Array.from({ length: r.int(2, 300) }, (_, i) => `m${i}: addOrder(number: ${i})`).join(' ')} }`,
    () => `fragment M on Mutation { a: addOrder(number: 1) b: purge(filter: {status: "x"}) } mutation { ...M ...M }`,
    () => `mutation { addOrder(number: 1) @skip(if: ${r.pick(['true', 'false', '$x', '"x"'])}) }`,
    () => `mutation { remove(id: ${id}) { number status } }`,
    () => `mutation { setByRef(ref: {id: ${id}, status: ${r.pick(['"x"', 'null'])}}) }`,
    () => `mutation { setByRef(ref: ${r.pick(['{}', '{status: "x"}', 'null', '{id: null}'])}) }`,
    () => `mutation { purge(filter: ${r.pick(['null', '{}', '{status: null}'])}) }`,
  ])();
}

// ------------------------------------------------------------------------------------------------
// Ids, query strings, headers

export function fuzzId(r: Rng): string {
  return r.pick<() => string>([
    () => r.pick(['%', '%Z', '%ZZ', '%E0%A4%A', '%C0%AF', '%ED%A0%80', '%FF%FE', '%00', '%2F', '%2e%2e', '%25', 'abc%', '%%41']),
    () => Array.from({ length: r.int(1, 20) }, () => (r.chance(0.3) ? `%${r.int(0, 255).toString(16).padStart(2, '0')}` : r.pick([...PRINTABLE]))).join(''),
    () => Array.from({ length: r.int(1, 10) }, () => r.pick(['%E2', '%82', '%AC', '%F0', '%9F', '%98', '%80', '%C3', '%28'])).join(''),
    () => 'x'.repeat(r.pick([129, 1000, 6000])),
    () => enc(text(r, 20)),
    () => r.pick(['..', '.', ';', ';a=b', 'a;b', '~', '@', ':', 'x1', 'webhooks', 'api-keys']),
  ])();
}

export function fuzzQuery(r: Rng): string {
  const params = ['page', 'pagesize', 'search', 'status', 'before', 'owner', 'client', 'variables', 'operationName', 'extensions', 'query', 'filter', text(r, 8)];
  const parts: string[] = [];
  for (let i = r.int(1, 5); i > 0; i--) {
    const name = r.pick(params);
    const v = r.pick<() => string>([
      () => r.pick(['-1', '0', '1e999', 'abc', '99999999999', '', 'NaN', 'null']),
      () => fuzzId(r),
      () => enc(deepJson(r, Math.min(r.depth(), 2000))),
      () => enc(fuzzGraphql(r).slice(0, 3000)),
      () => enc(text(r, 30)),
    ])();
    parts.push(r.chance(0.1) ? enc(name) : `${enc(name)}=${v}`);
  }
  return parts.join(r.pick(['&', '&', ';', '&&']));
}

const CONTENT_TYPES = [
  'application/json',
  'application/json; charset=utf-8',
  'application/json; charset=latin1',
  'application/merge-patch+json',
  'application/graphql',
  'text/plain',
  'application/xml',
  'multipart/form-data; boundary=x',
  'application/x-www-form-urlencoded',
  'application/json;;;',
  '*/*',
  'application/',
];

let clientCounter = 0;

function fuzzHeaders(r: Rng, door: Door, jsonBody: boolean): Record<string, string> {
  const headers: Record<string, string> = {};
  const auth = r.pick<() => string>([
    () => door.auth,
    () => door.auth,
    () => door.auth,
    () => 'Basic !!!notbase64',
    () => `Basic ${Buffer.from(`${text(r, 10)}:${text(r, 10)}`).toString('base64')}`,
    () => `Bearer rig_${text(r, 40).replace(/[^\x21-\x7e]/g, 'x')}`,
    () => 'Bearer',
    () => r.pick(['Digest x', 'basic', `Basic ${'A'.repeat(8000)}`]),
  ])();
  if (auth) headers.authorization = auth;
  if (jsonBody || r.chance(0.2)) headers['content-type'] = r.chance(0.7) ? (door.body === 'graphql' && r.chance(0.3) ? 'application/graphql' : 'application/json') : r.pick(CONTENT_TYPES);
  if (r.chance(0.15)) headers.accept = r.pick(['application/xml', 'application/json;q=0', '*/*;q=abc', 'application/graphql-response+json', text(r, 20).replace(/[^\x20-\x7e]/g, '')]);
  if (r.chance(0.1)) headers['content-encoding'] = r.pick(['gzip', 'br', 'deflate', 'identity', 'x-unknown']);
  // Each request comes from its own documentation-range address (RFC 3849; a header, never a
  // destination), sometimes behind garbage the resolver must skip.
  const client = `2001:db8::${(++clientCounter).toString(16)}`;
  headers['x-forwarded-for'] = r.chance(0.1) ? `${r.pick(['::1', '999.1.1.1', 'garbage, , ,', '127.0.0.1, 10.0.0.1', '[::1]:80'])}, ${client}` : client;
  if (r.chance(0.05)) headers['x-request-id'] = 'a'.repeat(r.int(100, 300));
  return headers;
}

// ------------------------------------------------------------------------------------------------
// Documents of each shape, with one field made bad

function loopbackUrl(r: Rng, targetUrl: string): string {
  return r.pick([`${targetUrl}/fuzz`, 'http://127.0.0.1:1/', `${targetUrl}/${fuzzId(r)}`, 'not a url', 'ftp://127.0.0.1/', 'http://[::1]:1/x', `${targetUrl}?${fuzzQuery(r)}`, '']);
}

function shapedDocument(r: Rng, door: Door, targetUrl: string): unknown {
  switch (door.shape) {
    case 'permission':
      return {
        predicate: r.chance(0.8) ? fuzzPredicate(r) : value(r),
        roles: r.chance(0.8) ? [r.pick(['user', 'root', '$unauthenticated', '', text(r, 10)])] : value(r),
        ...(r.chance(0.3) ? { priority: value(r) } : {}),
        ...(r.chance(0.3) ? { mongo: { readFilter: r.chance(0.5) ? value(r) : '__RAW__' } } : {}),
        ...(r.chance(0.2) ? { apiKeys: value(r) } : {}),
      };
    case 'webhook': {
      const headers = r.chance(0.3) ? { [r.pick(['X-A', 'X B', 'X-\u00e9', 'x:y', text(r, 10)])]: r.pick(['v', ' v', 'a\u0001b', '€', 'a\r\nb: c', text(r, 20)]) } : undefined;
      return {
        name: r.chance(0.9) ? text(r, 20) : value(r),
        type: r.pick(['http', 'http', 'email', 'ftp', '']),
        condition: r.chance(0.8) ? fuzzPredicate(r) : value(r),
        url: loopbackUrl(r, targetUrl),
        ...(headers ? { headers } : {}),
        ...(r.chance(0.5) ? { transform: { template: r.chance(0.9) ? fuzzTemplate(r) : value(r) } } : {}),
        ...(r.chance(0.1) ? { email: { to: [text(r, 10)], subject: fuzzTemplate(r), body: fuzzTemplate(r), bodyType: r.pick(['text', 'html', 'x']) } } : {}),
        ...(r.chance(0.1) ? { timeout_ms: value(r) } : {}),
      };
    }
    case 'app':
      return {
        descriptor: { name: text(r, 10), uri: r.chance(0.7) ? `f${r.int(0, 1e6)}` : text(r, 20) },
        schema: r.pick([
          `type Query { a: ${'['.repeat(r.depth())}String${']'.repeat(r.int(0, 100))} }`,
          'type Query { orders: [Order] } type Order { a: Int }',
          `type Query { ${'a'.repeat(r.int(1, 5))}: Int } type Mutation { x: Int }`,
          text(r, 100),
          'scalar Query',
        ]),
        mappings: r.chance(0.5) ? { Query: { a: { db: text(r, 5), collection: text(r, 5), find: r.chance(0.5) ? '__RAW__' : value(r) } } } : value(r),
      };
    case 'key':
      return { name: r.chance(0.8) ? text(r, 30) : value(r), roles: r.chance(0.6) ? [text(r, 8)] : value(r), ...(r.chance(0.5) ? { expiresIn: value(r) } : {}) };
    case 'key-rotation':
      return r.chance(0.7) ? { graceHours: r.chance(0.6) ? r.pick([-1, 0, 0.5, 168, 168.01, 1e9, -0]) : value(r) } : value(r);
    case 'key-limits':
      return r.chance(0.8)
        ? {
            limits: r.chance(0.8)
              ? { [r.pick(['per-key', 'per-key-day', '', text(r, 10)])]: r.chance(0.7) ? { limit: value(r), window: r.pick(['60s', '1d', '0s', '', text(r, 6)]) } : value(r) }
              : value(r),
          }
        : value(r);
    case 'mcp':
      // JSON-RPC as an agent sends it, one field made bad: the method, the id, the params, a tool call's name and arguments.
      return {
        jsonrpc: r.chance(0.9) ? '2.0' : value(r),
        ...(r.chance(0.8) ? { id: r.chance(0.7) ? r.int(0, 1e6) : value(r) } : {}),
        method: r.chance(0.85) ? r.pick(['initialize', 'tools/list', 'tools/call', 'ping', 'notifications/initialized', 'resources/list', '', text(r, 12)]) : value(r),
        params: r.chance(0.7)
          ? {
              name: r.chance(0.7) ? text(r, 12) : value(r),
              arguments: r.chance(0.5) ? '__RAW__' : value(r),
              protocolVersion: r.pick(['2025-06-18', '2025-11-25', '2026-07-28', '1999-01-01', text(r, 10)]),
              capabilities: value(r),
              clientInfo: value(r),
            }
          : value(r),
      };
    case 'test-send':
      return {
        ...(r.chance(0.5) ? { webhookId: r.chance(0.5) ? 'x1' : text(r, 10) } : { webhook: shapedDocument(r, { ...door, shape: 'webhook' }, targetUrl) }),
        event: r.chance(0.5) ? { request: { method: 'POST', path: '/api/x', headers: value(r), body: '__RAW__' }, response: { statusCode: value(r), body: value(r) } } : value(r),
      };
    case 'condition':
      return { condition: r.chance(0.85) ? fuzzPredicate(r) : value(r), ...(r.chance(0.5) ? { kind: r.pick(['webhook', 'permission', '', text(r, 8)]) } : {}) };
    case 'graphql':
    case 'graphql-mutation':
      return {
        query: r.chance(0.85) ? (door.shape === 'graphql-mutation' ? fuzzMutation(r) : fuzzGraphql(r)) : value(r),
        ...(r.chance(0.4) ? { variables: r.chance(0.5) ? '__RAW__' : value(r) } : {}),
        ...(r.chance(0.2) ? { operationName: value(r) } : {}),
        ...(r.chance(0.1) ? { extensions: r.chance(0.5) ? { persistedQuery: r.chance(0.5) ? { version: value(r), sha256Hash: value(r) } : value(r) } : value(r) } : {}),
      };
    default:
      return value(r);
  }
}

function fuzzBody(r: Rng, door: Door, targetUrl: string): { body: string | Buffer; kind: string; oversized?: boolean } {
  const roll = r.next();
  if (roll < 0.01) return { body: `{"a":"${'x'.repeat(1024 * 1024 + r.int(1, 4096))}"}`, kind: 'body:oversized', oversized: true };
  if (roll < 0.45 && door.shape) {
    const doc = shapedDocument(r, door, targetUrl);
    const raw = r.pick([deepJson(r), '1e999', '-', '"\\ud800"', '[1,]', 'NaN']);
    return { body: withRaw(doc, raw), kind: `${door.shape}` };
  }
  if (roll < 0.6) return { body: deepJson(r), kind: 'body:deep-json' };
  return r.pick<() => { body: string | Buffer; kind: string }>([
    () => ({ body: JSON.stringify(value(r)), kind: 'body:wrong-shape' }),
    () => ({ body: JSON.stringify(shapedDocument(r, door, targetUrl)).slice(0, r.int(0, 200)), kind: 'body:truncated' }),
    () => ({ body: Buffer.from(Array.from({ length: r.int(1, 200) }, () => r.int(0, 255))), kind: 'body:binary' }),
    () => ({ body: Buffer.concat([Buffer.from('{"name":"'), Buffer.from([0xc3, 0x28, 0xff, 0xfe, 0xed, 0xa0, 0x80]), Buffer.from('"}')]), kind: 'body:bad-utf8' }),
    () => ({ body: r.pick(['', ' ', 'null', '[]', '1', '"s"', 'true', '{"__proto__":{"x":1}}', '{"a":1,"a":2}', '{"constructor":{"prototype":{}}}']), kind: 'body:odd-json' }),
    () => ({ body: `{"a":"${'x'.repeat(r.pick([60_000, 200_000]))}"}`, kind: 'body:long-string' }),
  ])();
}

/**
 * The door's path in one disguise (issue 25): encoded letters in either hex case, `;parameters`,
 * repeated or trailing slashes, encoded `/` and `\`, double and malformed encodings. Each must be
 * decided as the plain path or refused with 400, never answered 5xx.
 */
export function fuzzPathEncoding(r: Rng, path: string): string {
  const slash = r.pick([...path.matchAll(/\//g)].map((m) => m.index));
  const inner = [...path.matchAll(/\//g)].map((m) => m.index).filter((i) => i > 0);
  const letters = [...path.matchAll(/[A-Za-z_]/g)].map((m) => m.index);
  const encodeLetter = (prefix: string, upper: boolean) => {
    if (letters.length === 0) return `${path}%41`;
    const i = r.pick(letters);
    const hex = path.charCodeAt(i).toString(16);
    return `${path.slice(0, i)}${prefix}${upper ? hex.toUpperCase() : hex}${path.slice(i + 1)}`;
  };
  return r.pick<() => string>([
    () => encodeLetter('%', false),
    () => encodeLetter('%', true),
    () => encodeLetter('%25', r.chance(0.5)),
    () => `${path.slice(0, slash)}/${path.slice(slash)}`,
    () => `${path}/`,
    () => `${path}${r.pick([';', ';x=1', ';jsessionid=a;b=c'])}`,
    () => (slash === 0 ? `${path};x` : `${path.slice(0, slash)};x=1${path.slice(slash)}`),
    () => {
      const encoded = r.pick(['%2F', '%2f', '%5C', '%5c', '%252F']);
      if (inner.length === 0) return `${path}${encoded}x`;
      const at = r.pick(inner);
      return `${path.slice(0, at)}${encoded}${path.slice(at + 1)}`;
    },
    () => `${path}${r.pick(['%', '%zz', '%c0%af', '%ed%a0%80', '%00', '%3B', '%3Fx', '%23x', '%20'])}`,
  ])();
}

/** The `index`-th generated bad request for `door` (deterministic for a given Rng state). */
export function fuzzRequest(r: Rng, door: Door, targetUrl: string): FuzzRequest {
  const idPart = door.path.includes('{id}') ? (r.chance(0.5) ? fuzzId(r) : 'x1') : '';
  let path = door.path.replaceAll('{id}', idPart);
  let kind = idPart && idPart !== 'x1' ? 'id' : '';
  if (r.chance(0.2)) {
    path = fuzzPathEncoding(r, path);
    kind = 'path-encoding';
  }
  if (r.chance(door.body === 'none' ? 0.6 : 0.2)) {
    path += `${path.includes('?') ? '&' : '?'}${door.shape === 'graphql' && door.method === 'GET' && r.chance(0.6) ? `query=${enc(fuzzGraphql(r).slice(0, 6000))}&${fuzzQuery(r)}` : fuzzQuery(r)}`;
    kind ||= 'query';
  }
  const sendsBody = door.body !== 'none' && r.chance(0.9);
  const headers = fuzzHeaders(r, door, sendsBody);
  if (!sendsBody) return { method: door.method, path, headers, kind: kind || 'headers' };
  const body = fuzzBody(r, door, targetUrl);
  if (door.body === 'graphql' && headers['content-type'] === 'application/graphql') {
    return { method: door.method, path, headers, body: door.shape === 'graphql-mutation' ? fuzzMutation(r) : fuzzGraphql(r), kind: 'graphql-document' };
  }
  // Any body past the document limit (a deep document can be) may be refused and cut off unread.
  const oversized = body.oversized || Buffer.byteLength(body.body) > MAX_DOCUMENT_BODY_BYTES;
  return { method: door.method, path, headers, body: body.body, kind: kind || body.kind, ...(oversized ? { oversized: true } : {}) };
}
