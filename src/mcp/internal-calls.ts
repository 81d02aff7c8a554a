/**
 * The agent's address on a tool call's inner request. A tool call reaches `/graphql/<uri>` by a
 * request to the address the MCP request arrived on (call-graphql.ts), so without this the request
 * chain would see that address: every agent would share one `by: client` rate-limit allowance,
 * and a permission whose predicate allows the server's own address would allow every remote agent.
 * The inner calls' connections are made here and each one's own end (local address and
 * port) is remembered while it is open; a request whose peer is exactly such an end is this
 * process's own, and its `X-Forwarded-For`, which the MCP route set to the agent's address alone,
 * is believed. Any other request is resolved as before.
 *
 * The whole end, not the port alone and not "a loopback peer": behind a listener on a pod IP the
 * inner request arrives from the pod IP (the kernel picks the destination's own address as the
 * source), so a loopback-only rule fell back to the pod IP for every agent (issue 53); and a port
 * alone would let a client anywhere whose source port happens to equal one of ours claim any
 * address. An address and port pair names one open socket: while ours holds it, no other socket
 * on this host can connect from it to this listener (the connection's four-tuple would be the
 * same), and another host cannot hold this host's address.
 */
import type { Socket } from 'node:net';
import { Agent, buildConnector } from 'undici';
import type { ClientIpResolver } from '../http/client-ip.js';

/** An IPv4 peer of a dual-stack listener shows as `::ffff:a.b.c.d`; the socket that made it knows `a.b.c.d`. */
function plain(address: string): string {
  return address.startsWith('::ffff:') && address.includes('.') ? address.slice(7) : address;
}

const endOf = (address: string, port: number): string => `${plain(address)}|${port}`;

export class InternalCalls {
  private readonly ends = new Set<string>();

  /** The client tool calls go through: kept-alive connections whose own ends are known. */
  dispatcher(): Agent {
    const connect = buildConnector({});
    return new Agent({
      keepAliveTimeout: 30_000,
      connections: 64,
      connect: (options, callback) =>
        connect(options, (error, socket) => {
          if (socket) {
            const { localAddress, localPort } = socket as Socket;
            if (localAddress !== undefined && localPort !== undefined) {
              const end = endOf(localAddress, localPort);
              this.ends.add(end);
              socket.once('close', () => this.ends.delete(end));
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
      if (peerPort !== undefined && typeof xff === 'string' && xff !== '' && this.ends.has(endOf(peer, peerPort))) return { ip: xff, peerTrusted: false };
      return resolve(peer, xff, peerPort);
    };
  }
}
