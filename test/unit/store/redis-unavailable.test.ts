import type { ServerResponse } from 'node:http';
import { describe, expect, it } from 'vitest';
import { sendError } from '../../../src/http/respond.js';
import { isRedisUnavailable } from '../../../src/store/redis-errors.js';

function fakeResponse() {
  const sent: { status?: number; headers?: Record<string, unknown>; body?: string } = {};
  const res = {
    headersSent: false,
    writeHead(status: number, headers: Record<string, unknown>) {
      sent.status = status;
      sent.headers = headers;
      return res;
    },
    end(body: string) {
      sent.body = body;
    },
  } as unknown as ServerResponse;
  return { res, sent };
}

describe('Redis failing over (cluster and sentinel client errors) is a 503, not a 500', () => {
  it.each([
    'Connection is closed.',
    "Stream isn't writeable and enableOfflineQueue options is false",
    "Cluster isn't ready and enableOfflineQueue options is false",
    'Too many Cluster redirections. Last error: Connection is closed.',
    'CLUSTERDOWN The cluster is down',
    'LOADING Redis is loading the dataset in memory',
    "READONLY You can't write against a read only replica.",
    'All sentinels are unreachable. Retrying from scratch after 100ms.',
  ])('%s', (message) => {
    expect(isRedisUnavailable(new Error(message))).toBe(true);
    const { res, sent } = fakeResponse();
    sendError(res, new Error(message));
    expect(sent.status).toBe(503);
    expect(sent.headers?.['retry-after']).toBeDefined();
    expect(JSON.parse(sent.body!).message).toMatch(/Redis\) is unreachable/);
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
