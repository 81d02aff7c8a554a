/**
 * The config as one zod schema (issue 48, SPEC §15): unknown keys refused at every level with
 * their path, a bad value deep in a list named by its index, and the JSON Schema generated from
 * the same definitions, committed as docs/outrigger.schema.json and kept equal to what
 * `outrigger config schema` prints.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { configSchemaText } from '../../../src/cli/commands/config.js';
import { configJsonSchema, validateConfig } from '../../../src/config/validate.js';

const base = { service: { id: 'svc' }, upstream: { url: 'http://127.0.0.1:1' } };
type JsonSchema = { type?: string | string[]; properties?: Record<string, JsonSchema>; additionalProperties?: unknown; items?: JsonSchema; anyOf?: JsonSchema[]; required?: string[] };

describe('unknown keys, at every level', () => {
  it('names each with its path, and the key it was likely meant to be', () => {
    const { problems } = validateConfig({
      ...base,
      servce: { id: 'x' },
      upstream: { url: 'http://127.0.0.1:1', timeoutMS: 5, identity: { jwt: { secrett: 'x' } } },
      webhooks: { email: { smtp: { hots: 'mail' } } },
      users: { static: [{ id: 'a', password: 'scrypt$1', role: ['x'] }] },
      limits: { policies: [{ name: 'p', by: 'key', quota: { limit: 1, period: 'day', every: 2 } }] },
    });
    expect(problems).toEqual([
      'upstream.identity.jwt.secrett: unknown option (did you mean "secret"?)',
      'upstream.timeoutMS: unknown option (did you mean "timeoutMs"?)',
      'users.static[0].role: unknown option (did you mean "roles"?)',
      'webhooks.email.smtp.hots: unknown option (did you mean "host"?)',
      'limits.policies[0].quota.every: unknown option (a quota has limit and period)',
      'servce: unknown option (did you mean "service"?)',
    ]);
  });

  it('says where to look when nothing is close', () => {
    expect(validateConfig({ ...base, listen: { colour: 'blue' } }).problems).toEqual(['listen.colour: unknown option (check the spelling; see the configuration reference in README.md)']);
  });
});

describe('a bad value deep in a list', () => {
  it('is named by its index, beside the other problems of the same run', () => {
    const { problems } = validateConfig({
      ...base,
      limits: {
        policies: [
          { name: 'a', by: 'key', limit: 1, window: '1s' },
          { name: 'b', by: 'key', quota: { limit: 10, period: 'week' } },
        ],
      },
      redis: { cluster: { nodes: ['h1:7001', 'h2:70000'] } },
      users: {
        static: [
          { id: 'a', password: 'scrypt$1' },
          { id: 'b', password: 'scrypt$2', roles: ['r', 7] },
        ],
      },
      webhooks: { retrySchedule: ['5s', '1m', 'soon'] },
      listen: { port: 99999 },
    });
    expect(problems).toEqual([
      'listen.port: must be an integer from 0 to 65535 (got 99999)',
      'redis.cluster.nodes[1]: port must be an integer from 1 to 65535 (got "h2:70000")',
      'users.static[1].roles[1]: must be a string',
      'webhooks.retrySchedule[2]: must be a delay from 10ms to 7d, as seconds or a string like 200ms, 5s, 1m, 1h (got "soon")',
      'limits.policies[1].quota.period: must be one of day, month (a calendar period in UTC; got "week")',
    ]);
  });

  it('still returns the valid parts of the config beside the problems', () => {
    const { config, problems } = validateConfig({ graphql: { maxResponseBytes: 2 * 1024 * 1024, maxDepth: 0 } });
    expect(problems).toEqual(['service.id: is required', 'upstream.url: is required', 'graphql.maxDepth: must be an integer from 1 to 100 (got 0)']);
    expect(config.graphql.maxResponseBytes).toBe(2 * 1024 * 1024);
    expect(config.graphql.maxDepth).toBe(12);
  });
});

describe('the JSON Schema (`outrigger config schema`)', () => {
  const schema = configJsonSchema() as JsonSchema & { $schema: string };

  it('is draft 2020-12, asks for service and upstream, and refuses unknown keys in every mapping', () => {
    expect(schema.$schema).toBe('https://json-schema.org/draft/2020-12/schema');
    expect(schema.required).toEqual(['service', 'upstream']);
    const open: string[] = [];
    const walk = (s: JsonSchema | undefined, path: string) => {
      if (!s) return;
      if (s.properties) {
        if (s.additionalProperties !== false) open.push(path);
        for (const [key, child] of Object.entries(s.properties)) walk(child, `${path}.${key}`);
      }
      walk(s.items, `${path}[]`);
      s.anyOf?.forEach((branch) => walk(branch, path));
    };
    walk(schema, '(root)');
    expect(open).toEqual([]);
    expect(Object.keys(schema.properties!)).toEqual(expect.arrayContaining(['service', 'upstream', 'redis', 'limits', 'cors', 'mcp']));
    expect(schema.properties!.listen!.properties!.port).toMatchObject({ type: 'integer', minimum: 0, maximum: 65535, default: 8080 });
  });

  it('knows every key the example config uses', () => {
    const example = parse(readFileSync('config/outrigger.example.yaml', 'utf8')) as unknown;
    const unknown: string[] = [];
    const walk = (value: unknown, s: JsonSchema | undefined, path: string) => {
      if (!s || !value || typeof value !== 'object') return;
      const branches = s.anyOf ?? [s];
      if (Array.isArray(value)) return branches.forEach((b) => b.items && value.forEach((item, i) => walk(item, b.items, `${path}[${i}]`)));
      const mapping = branches.find((b) => b.properties);
      if (!mapping) return;
      for (const [key, item] of Object.entries(value)) {
        if (!mapping.properties![key] && mapping.additionalProperties === false) unknown.push(`${path}.${key}`);
        walk(item, mapping.properties![key], `${path}.${key}`);
      }
    };
    walk(example, schema, '');
    expect(unknown).toEqual([]);
  });

  it('is what docs/outrigger.schema.json holds (regenerate: node dist/src/cli/index.js config schema > docs/outrigger.schema.json)', () => {
    expect(readFileSync('docs/outrigger.schema.json', 'utf8')).toBe(configSchemaText());
  });
});
