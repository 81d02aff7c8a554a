/**
 * listeners.ts (SPEC §11.1, issue 51's abuse rows): a listener that never reads is closed once its
 * unread bytes pass MAX_UNSENT_BYTES; only listeners whose own list changed are told; one
 * principal's streams are bounded and a closed stream gives its place back.
 */
import { EventEmitter } from 'node:events';
import { describe, expect, it } from 'vitest';
import type { RequestScope } from '../../../src/http/scope.js';
import { Listeners, MAX_UNSENT_BYTES } from '../../../src/mcp/listen/listeners.js';

/** A response whose client never reads: everything written stays unsent. */
function stalledScope(id: string) {
  const res = Object.assign(new EventEmitter(), {
    destroyed: false,
    writableLength: 0,
    status: 0,
    text: '',
    writeHead(status: number) {
      res.status = status;
    },
    write(chunk: string) {
      res.writableLength += Buffer.byteLength(chunk);
      res.text += chunk;
      return false;
    },
    end(chunk?: string) {
      if (chunk) res.text += chunk;
    },
    destroy() {
      res.destroyed = true;
      res.emit('close');
    },
  });
  const scope = { res, principal: { via: 'basic', id, roles: [] }, clientIp: '127.0.0.1' } as unknown as RequestScope;
  return { scope, res };
}

const listen = (id: number) => ({ jsonrpc: '2.0', id, method: 'subscriptions/listen', params: { notifications: { toolsListChanged: true } } });

describe('list-changed listeners', () => {
  it('a listener that never reads is closed once its unread bytes pass the bound; others are told only when their list changed', () => {
    let version = 0;
    const listeners = new Listeners({
      bounds: { maxPerPrincipal: 5, maxPerProcess: 100 },
      lists: { tools: (scope) => (scope.principal.id === 'alice' ? `v${version}` : 'same'), resources: () => null },
      offersResources: false,
    });
    const alice = stalledScope('alice');
    const bob = stalledScope('bob');
    void listeners.serve(alice.scope, listen(1));
    void listeners.serve(bob.scope, listen(2));
    expect(alice.res.text).toContain('notifications/subscriptions/acknowledged');
    expect(listeners.size).toBe(2);
    let rounds = 0;
    while (!alice.res.destroyed && rounds < 10_000) {
      version++;
      listeners.notify();
      rounds++;
    }
    expect(alice.res.destroyed).toBe(true);
    expect(alice.res.writableLength).toBeGreaterThan(MAX_UNSENT_BYTES);
    expect(rounds).toBeLessThan(MAX_UNSENT_BYTES / 50);
    expect(listeners.size).toBe(1);
    expect(bob.res.text).not.toContain('list_changed');
    expect(bob.res.destroyed).toBe(false);
  });

  it("one principal's streams are bounded; closing one gives its place back", () => {
    const listeners = new Listeners({ bounds: { maxPerPrincipal: 2, maxPerProcess: 100 }, lists: { tools: () => '', resources: () => null }, offersResources: false });
    const held = [stalledScope('alice'), stalledScope('alice')];
    held.forEach((h, i) => void listeners.serve(h.scope, listen(i)));
    const third = stalledScope('alice');
    void listeners.serve(third.scope, listen(3));
    expect(third.res.status).toBe(429);
    expect(third.res.text).toMatch(/subscriptions\.maxPerPrincipal/);
    held[0]!.res.destroy();
    const fourth = stalledScope('alice');
    void listeners.serve(fourth.scope, listen(4));
    expect(fourth.res.status).toBe(200);
    listeners.closeAll();
    expect(listeners.size).toBe(0);
  });
});
