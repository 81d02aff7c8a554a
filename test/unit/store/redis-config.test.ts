import { describe, expect, it } from 'vitest';
import { validateConfig } from '../../../src/config/validate.js';
import { loadConfigText } from '../../../src/config/load.js';
import { redisKeys } from '../../../src/store/keys.js';

const base = { service: { id: 'svc' }, upstream: { url: 'http://127.0.0.1:8081' } };
const redisOf = (redis: unknown) => validateConfig({ ...base, redis });
const problemsOf = (redis: unknown) => redisOf(redis).problems;

describe('config: redis', () => {
  it('defaults to one local node, no replica wait', () => {
    const { config, problems } = validateConfig(base);
    expect(problems).toEqual([]);
    expect(config.redis).toMatchObject({ url: 'redis://127.0.0.1:6379', cluster: null, sentinel: null, password: null, tls: false, waitForReplicas: 0 });
  });

  it('reads cluster nodes as a YAML list or one comma-separated string', () => {
    const list = redisOf({ cluster: { nodes: ['10.0.0.1:7001', 'redis-b.internal:7002', '[::1]:7003'] } });
    expect(list.problems).toEqual([]);
    expect(list.config.redis.cluster!.nodes).toEqual([
      { host: '10.0.0.1', port: 7001 },
      { host: 'redis-b.internal', port: 7002 },
      { host: '::1', port: 7003 },
    ]);
    expect(list.config.redis.url).toBeNull();
    expect(list.config.redis.waitForReplicas).toBe(1);
    const text = redisOf({ cluster: { nodes: ' h1:7001, h2:7002 ' } });
    expect(text.problems).toEqual([]);
    expect(text.config.redis.cluster!.nodes).toEqual([
      { host: 'h1', port: 7001 },
      { host: 'h2', port: 7002 },
    ]);
  });

  it('reads sentinel with its master name, nodes, own password; password and tls apply to the data nodes', () => {
    const { config, problems } = redisOf({ sentinel: { masterName: 'mymaster', nodes: 's1:26379,s2:26379', password: 'spw' }, password: 'pw', tls: true, waitForReplicas: 0 });
    expect(problems).toEqual([]);
    expect(config.redis).toMatchObject({
      url: null,
      sentinel: {
        masterName: 'mymaster',
        nodes: [
          { host: 's1', port: 26379 },
          { host: 's2', port: 26379 },
        ],
        password: 'spw',
      },
      password: 'pw',
      tls: true,
      waitForReplicas: 0,
    });
  });

  it('takes the password and TLS of a single-node URL', () => {
    const { config, problems } = redisOf({ url: 'rediss://:s3cret@cache.internal:6380/2' });
    expect(problems).toEqual([]);
    expect(config.redis).toMatchObject({ password: 's3cret', tls: true });
  });

  it.each([
    [{ url: 'redis://h:99999' }, /^redis\.url: port must be an integer from 1 to 65535 \(got "99999"\)$/],
    [{ url: 'redis://h1:7001,h2:7002' }, /^redis\.url: takes one node; for several use redis\.cluster\.nodes .* or redis\.sentinel\.nodes/],
    [{ url: 'h1:7001' }, /^redis\.url: must be redis:\/\/host:port, rediss:\/\/host:port or "embedded"/],
    [{ url: 'redis://' }, /^redis\.url: /],
    [{ url: 'redis://h:6379/99' }, /^redis\.url: the path may only name a database number from 0 to 15/],
    [{ url: 'redis://:a@h:1', password: 'b' }, /^redis\.password: the password is also inside redis\.url; give it once$/],
    [{ url: 'redis://h:1', cluster: { nodes: ['h:2'] } }, /^redis\.cluster: give exactly one of redis\.url, redis\.cluster, redis\.sentinel \(found url and cluster\)$/],
    [{ cluster: { nodes: ['h:2'] }, sentinel: { masterName: 'm', nodes: ['h:3'] } }, /^redis\.sentinel: give exactly one of/],
    [{ cluster: {} }, /^redis\.cluster\.nodes: is required/],
    [{ cluster: { nodes: [] } }, /^redis\.cluster\.nodes: needs at least one host:port$/],
    [{ cluster: { nodes: ['h1:7001', 'h2'] } }, /^redis\.cluster\.nodes\[1\]: must be host:port .* \(got "h2"\)$/],
    [{ cluster: { nodes: 'h1:0' } }, /^redis\.cluster\.nodes\[0\]: port must be an integer from 1 to 65535 \(got "h1:0"\)$/],
    [{ cluster: { nodes: ['bad host:1'] } }, /^redis\.cluster\.nodes\[0\]: must be host:port/],
    [{ cluster: { nodes: [7001] } }, /^redis\.cluster\.nodes\[0\]: must be a string host:port/],
    [{ cluster: { nodes: 5 } }, /^redis\.cluster\.nodes: must be a list of host:port or one comma-separated string/],
    [{ sentinel: { nodes: ['h:26379'] } }, /^redis\.sentinel\.masterName: is required$/],
    [{ sentinel: { masterName: 'm' } }, /^redis\.sentinel\.nodes: is required/],
    [{ sentinel: { masterName: 'm', nodes: 'h:26379', extra: 1 } }, /^redis\.sentinel\.extra: unknown option/],
    [{ keyPrefix: 'a{b}' }, /^redis\.keyPrefix: must be 1-64 letters, digits or \. _ : - \(braces would move the service hash tag\)$/],
    [{ tls: 'yes' }, /^redis\.tls: must be true or false/],
  ])('refuses %j naming the field', (redis, pattern) => {
    const problems = problemsOf(redis);
    expect(
      problems.some((p) => pattern.test(p)),
      problems.join('\n'),
    ).toBe(true);
  });

  it('reports through `check` (loadConfigText) rather than failing at start', () => {
    expect(() => loadConfigText('service: {id: s}\nupstream: {url: "http://127.0.0.1:1"}\nredis: {url: "redis://h:99999"}\n', '/x/outrigger.yaml')).toThrow(
      /redis\.url: port must be an integer from 1 to 65535/,
    );
  });
});

describe('store keys: one hash tag per service', () => {
  it('every key of a service carries the service id as its hash tag (one Redis Cluster slot)', () => {
    const keys = redisKeys('outrigger', 'svc-1');
    const names = Object.values(keys).flatMap((v) => (typeof v === 'function' ? [(v as (...a: string[]) => string)('a{b}', 'c}{d')] : typeof v === 'string' ? [v] : []));
    const streamGroup = keys.eventsGroup;
    // An idempotency record is the one exception: tagged by service and digest, so records spread over the slots (below).
    const record = keys.idempotencyRecord('a{b}');
    for (const name of names.filter((n) => n !== streamGroup && n !== record)) {
      // Redis hashes the text between the first '{' and the first '}' after it.
      const open = name.indexOf('{');
      const close = name.indexOf('}', open + 1);
      expect(name.slice(open + 1, close), name).toBe('svc-1');
    }
    expect(names.length).toBeGreaterThan(20);
  });

  it('an idempotency record is tagged by its service and digest: one slot per record, records of one service spread over the cluster', () => {
    const name = redisKeys('outrigger', 'svc-1').idempotencyRecord('d1');
    const open = name.indexOf('{');
    expect(name.slice(open + 1, name.indexOf('}', open + 1))).toBe('svc-1:d1');
  });
});
