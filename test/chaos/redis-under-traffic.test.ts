/**
 * Chaos (issue 28 item 3): Redis turned into a read-only replica (REPLICAOF) and Redis restarted,
 * each while teed POSTs, key-authenticated GETs and key issuing keep coming. Asserted for each:
 * no answer is a 500; a refusal is the documented 503 with Retry-After; the pass-through keeps
 * answering for a known key; and every teed request that was answered 2xx has its event
 * delivered once the fault ends (nothing lost).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../src/util/free-port.js';
import { call, type CallResult } from '../support/clients/http-client.js';
import { sleep, until } from '../support/wait.js';
import { startTarget, type Target } from '../support/peers/webhook-target.js';
import { startChaosStack, type ChaosStack } from './support.js';

describe('chaos: Redis read-only, then restarted, under traffic', () => {
  let target: Target;
  let stack: ChaosStack;
  let proxy: ChaosStack['proxy'];
  let redis: ChaosStack['redis'];
  let key: string;

  beforeAll(async () => {
    target = await startTarget();
    stack = await startChaosStack({ service: 'chaos-traffic', worker: true });
    ({ proxy, redis } = stack);
    const issued = await stack.issueKey('traffic');
    expect(issued.status).toBe(201);
    key = issued.json.key;
    await stack.ordersWebhook(`${target.url}/hook`);
    await until(async () => (await call(proxy.url, '/shop/orders', { auth: `Bearer ${key}` })).status === 200, 'the key to verify');
  }, 60_000);

  afterAll(async () => {
    await stack?.stop();
    await target?.close();
  });

  /** Traffic until `stop()`: a teed POST, a GET with the key and a key issue, in turn, 10 ms apart. */
  function traffic(tag: string) {
    const answers: Array<{ what: string; res: CallResult }> = [];
    let running = true;
    let n = 0;
    const loop = (async () => {
      while (running) {
        const i = n++;
        const what = ['teed', 'get', 'issue'][i % 3]!;
        const res =
          what === 'teed'
            ? await call(proxy.url, '/shop/orders', { method: 'POST', auth: `Bearer ${key}`, body: { _id: `${tag}-${i}`, total: i } })
            : what === 'get'
              ? await call(proxy.url, '/shop/orders?pagesize=1', { auth: `Bearer ${key}` })
              : await stack.issueKey(`${tag}-${i}`);
        answers.push({ what, res });
        await sleep(10);
      }
    })();
    return {
      answers,
      async stop() {
        running = false;
        await loop;
        return answers;
      },
    };
  }

  async function expectNothingLost(tag: string, answers: Array<{ what: string; res: CallResult }>) {
    for (const { what, res } of answers) {
      expect(res.status, `${what} answered ${res.status}: ${res.text.slice(0, 200)}`).not.toBe(500);
      expect([200, 201, 503], `${what} answered ${res.status}`).toContain(res.status);
      if (res.status === 503) {
        expect(res.headers['retry-after'], `${what}: 503 without Retry-After`).toBeDefined();
        expect(res.json?.message ?? '').toMatch(/redis/i);
      }
    }
    // The pass-through for a known key never needed Redis.
    expect(answers.filter((a) => a.what === 'get').every((a) => a.res.status === 200)).toBe(true);
    const expected = answers.filter((a) => a.what === 'teed' && a.res.status === 201).length;
    expect(expected, 'some teed requests were answered').toBeGreaterThan(5);
    const delivered = () => new Set(target.received.map((r) => JSON.parse(r.body).request.body._id as string).filter((id) => id.startsWith(`${tag}-`)));
    await until(() => delivered().size >= expected, `${expected} teed events of ${tag} to be delivered`, 30_000);
    expect(delivered().size).toBe(expected);
  }

  it('REPLICAOF for 2 s: writes refused as 503, reads and the tee go on, every teed event delivered', async () => {
    // A replica of a master it cannot reach: read-only, and it keeps its data (a replica of a
    // live master would replace its data with the master's, which no failover does to the node
    // that held the writes).
    const load = traffic('ro');
    await sleep(500);
    await redis.client.replicaof('127.0.0.1', String(await freePort()));
    await sleep(2000);
    await redis.client.replicaof('NO', 'ONE');
    await sleep(1000);
    const answers = await load.stop();
    // The fault was real: some key issues were refused while Redis was a replica.
    expect(
      answers.some((a) => a.what === 'issue' && a.res.status === 503),
      'no write was refused: was Redis read-only at all?',
    ).toBe(true);
    await expectNothingLost('ro', answers);
  }, 60_000);

  it('restarted (down 2 s): every answer documented, every teed event delivered once it is back', async () => {
    const load = traffic('rs');
    await sleep(500);
    await redis.stop();
    await sleep(2000);
    await redis.restart();
    await sleep(1500);
    const answers = await load.stop();
    expect(
      answers.some((a) => a.what === 'issue' && a.res.status === 503),
      'no write was refused: was Redis down at all?',
    ).toBe(true);
    await expectNothingLost('rs', answers);
  }, 60_000);
});
