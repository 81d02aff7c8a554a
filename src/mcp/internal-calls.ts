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
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { Agent, buildConnector } from 'undici';
import { afterAnswerOf, type AfterAnswer } from '../http/after-answer.js';
import type { ClientIpResolver } from '../http/client-ip.js';

/** The header an inner call names its `/mcp` request's answer by (a token of this process's, believed only on its own connections). */
export const OUTER_ANSWER_HEADER = 'x-outrigger-outer-answer';

/** An IPv4 peer of a dual-stack listener shows as `::ffff:a.b.c.d`; the socket that made it knows `a.b.c.d`. */
function plain(address: string): string {
  return address.startsWith('::ffff:') && address.includes('.') ? address.slice(7) : address;
}

const endOf = (address: string, port: number): string => `${plain(address)}|${port}`;

export class InternalCalls {
  private readonly ends = new Set<string>();
  /** Per token, the `/mcp` answer it names, while that answer has not left. */
  private readonly outer = new Map<string, AfterAnswer>();
  private readonly tokens = new WeakMap<ServerResponse, string>();

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

  /**
   * The token an inner call of this `/mcp` answer carries (OUTER_ANSWER_HEADER), so that the
   * changes its writes make are published only once the agent has this answer (SPEC §11.1; the
   * inner `POST /graphql/<uri>` answers before the outer one is written). Forgotten once the answer
   * left: a lookup after that finds nothing, and the inner answer alone is waited for, which is
   * then later than the outer one.
   */
  hold(res: ServerResponse): string {
    const held = this.tokens.get(res);
    if (held !== undefined) return held;
    const token = randomUUID();
    this.tokens.set(res, token);
    this.outer.set(token, afterAnswerOf(res));
    const drop = () => {
      this.outer.delete(token);
      res.off('finish', drop);
      res.off('close', drop);
    };
    res.once('finish', drop);
    res.once('close', drop);
    return token;
  }

  /** The `/mcp` answer an inner request also waits for: only on this process's own connections, only for a token it holds. */
  outerAnswer(req: IncomingMessage): AfterAnswer | undefined {
    const token = req.headers[OUTER_ANSWER_HEADER];
    if (typeof token !== 'string') return undefined;
    const { remoteAddress, remotePort } = req.socket;
    if (remoteAddress === undefined || remotePort === undefined || !this.ends.has(endOf(remoteAddress, remotePort))) return undefined;
    return this.outer.get(token);
  }
}
