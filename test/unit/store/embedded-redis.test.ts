import { mkdtempSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { startEmbeddedRedis } from '../../../src/store/embedded-redis.js';

describe('embedded redis-server: a port someone else holds', () => {
  it("names redis-server's own reason when the port it was given is taken (what it printed on stdout is kept)", async () => {
    const holder = createServer();
    await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
    const port = (holder.address() as { port: number }).port;
    try {
      await expect(startEmbeddedRedis({ dir: mkdtempSync(join(tmpdir(), 'embedded-port-')), port })).rejects.toThrow(/address already in use/i);
    } finally {
      holder.close();
    }
  });
});
