import { describe, expect, it } from 'vitest';
import { sendError } from '../../../src/http/respond.js';
import { isRedisUnavailable, redisRefusal } from '../../../src/store/redis-errors.js';
import { fakeResponse } from '../../support/peers/fake-response.js';

describe('every Redis refusal (failing over, full, read-only, loading, slow) is a 503 saying what Redis refused, not a 500', () => {
  it.each([
    ['Connection is closed.', /Redis\) is unreachable/],
    ["Stream isn't writeable and enableOfflineQueue options is false", /Redis\) is unreachable/],
    ["Cluster isn't ready and enableOfflineQueue options is false", /failing over/],
    ['Too many Cluster redirections. Last error: Connection is closed.', /failing over/],
    ['CLUSTERDOWN The cluster is down', /cluster is down \(CLUSTERDOWN\)/],
    ['LOADING Redis is loading the dataset in memory', /loading its data .*\(LOADING\)/],
    ["READONLY You can't write against a read only replica.", /read-only replica \(READONLY\)/],
    ['All sentinels are unreachable. Retrying from scratch after 100ms.', /failing over/],
    ["OOM command not allowed when used memory > 'maxmemory'.", /out of memory .*\(OOM/],
    ['MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to no.', /MASTERDOWN/],
    ['TRYAGAIN Multiple keys request during rehashing of slot', /TRYAGAIN/],
    ['BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSCRIPT.', /script \(BUSY\)/],
    ['MISCONF Redis is configured to save RDB snapshots, but it is currently not able to persist on disk.', /save its data to disk \(MISCONF\)/],
    ['NOREPLICAS Not enough good replicas to write.', /NOREPLICAS/],
    ['Command timed out', /did not answer in time/],
  ])('%s', (message, says) => {
    expect(isRedisUnavailable(new Error(message))).toBe(true);
    const { res, sent } = fakeResponse();
    sendError(res, new Error(message));
    expect(sent.status).toBe(503);
    expect(Number(sent.headers?.['retry-after'])).toBeGreaterThan(0);
    expect(JSON.parse(sent.body!).message).toMatch(says);
    expect(JSON.parse(sent.body!).message).toMatch(/retry/);
  });

  it('names the refusal for the metric and the log, also when a caller wrapped it (Error.cause)', () => {
    expect(redisRefusal(new Error("OOM command not allowed when used memory > 'maxmemory'."))?.reason).toBe('oom');
    expect(redisRefusal(new Error('saving failed', { cause: new Error("READONLY You can't write against a read only replica.") }))?.reason).toBe('readonly');
    expect(redisRefusal('OOM as a string')).toBeNull();
  });

  it('leaves other errors (a command Redis refused, a bug) to the 500 path', () => {
    for (const message of ["ERR wrong number of arguments for 'hget' command", "CROSSSLOT Keys in request don't hash to the same slot", 'x is undefined']) {
      expect(isRedisUnavailable(new Error(message))).toBe(false);
      const { res, sent } = fakeResponse();
      sendError(res, new Error(message));
      expect(sent.status).toBe(500);
    }
  });
});
