/**
 * The agent's address on a tool call's inner request. A tool call reaches `/graphql/<uri>` over
 * loopback (call-graphql.ts), so without this the request chain would see 127.0.0.1: every agent
 * would share one `by: client` rate-limit allowance, and a permission whose predicate allows
 * `remote-ip(127.0.0.1)` would allow every remote agent. The loopback client's connections are
 * made here and their local ports remembered while they are open; a request arriving from one of
 * them (loopback peer, that port: no other process can hold it meanwhile) is this process's own,
 * and its `X-Forwarded-For`, which the MCP route set to the agent's address alone, is believed.
 * Any other request is resolved as before.
 */
import type { Socket } from 'node:net';
import { Agent, buildConnector } from 'undici';
import type { ClientIpResolver } from '../http/client-ip.js';

const LOOPBACK = new Set(['127.0.0.1', '::1', '::ffff:127.0.0.1']);

export class InternalCalls {
  private readonly ports = new Set<number>();

  /** The loopback client tool calls go through: kept-alive connections whose ports are known. */
  dispatcher(): Agent {
    const connect = buildConnector({});
    return new Agent({
      keepAliveTimeout: 30_000,
      connections: 64,
      connect: (options, callback) =>
        connect(options, (error, socket) => {
          if (socket) {
            const port = (socket as Socket).localPort;
            if (port !== undefined) {
              this.ports.add(port);
              socket.once('close', () => this.ports.delete(port));
            }
          }
          // undici's callback takes (error, null) or (null, socket).
          (callback as (error: Error | null, socket: unknown) => void)(error, socket);
        }),
    });
  }

  /** Wraps the request chain's client-address resolver (app.ts). */
  wrap(resolve: ClientIpResolver): ClientIpResolver {
    return (peer, xff, peerPort) => {
      if (peerPort !== undefined && this.ports.has(peerPort) && LOOPBACK.has(peer) && typeof xff === 'string' && xff !== '') return { ip: xff, peerTrusted: false };
      return resolve(peer, xff, peerPort);
    };
  }
}
