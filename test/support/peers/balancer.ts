/**
 * A small round-robin TCP balancer on a loopback port, standing in for a Kubernetes Service:
 * connections (not requests) are spread over the endpoints that are ready, an endpoint is ready
 * while its readiness probe answers 200, and a connection keeps the endpoint it was given for its
 * whole life (as kube-proxy's do). That last point is why a draining replica must answer with
 * `Connection: close`: a kept-alive client would otherwise keep sending to it.
 *
 * Endpoints start not ready (as a new pod does) and are probed every `probeEveryMs`; one failed
 * probe takes an endpoint out (the test wants the stopping replica out soon, not a threshold).
 */
import { createServer, connect, type Server, type Socket } from 'node:net';
import { request } from 'node:http';

export interface Balancer {
  url: string;
  add(endpoint: string): void;
  remove(endpoint: string): void;
  /** Endpoints whose last probe passed. */
  ready(): string[];
  /** Connections handed to each endpoint so far. */
  connections: Map<string, number>;
  /** Client connections that found no ready endpoint (each is a failure a client sees). */
  refused: number;
  close(): Promise<void>;
}

export async function startBalancer(options: { probePath?: string; probeEveryMs?: number } = {}): Promise<Balancer> {
  const probePath = options.probePath ?? '/_health/ready';
  const endpoints = new Map<string, { ready: boolean }>();
  const sockets = new Set<Socket>();
  let next = 0;

  const balancer: Omit<Balancer, 'url'> = {
    add: (endpoint) => void endpoints.set(endpoint, { ready: false }),
    remove: (endpoint) => void endpoints.delete(endpoint),
    ready: () => [...endpoints].filter(([, state]) => state.ready).map(([endpoint]) => endpoint),
    connections: new Map(),
    refused: 0,
    close: async () => {
      clearInterval(prober);
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };

  const probe = (endpoint: string) =>
    new Promise<boolean>((resolve) => {
      const req = request(`${endpoint}${probePath}`, { agent: false, timeout: 1000 }, (res) => {
        res.resume();
        resolve(res.statusCode === 200);
      });
      req.on('timeout', () => req.destroy());
      req.on('error', () => resolve(false));
      req.end();
    });
  let probing = false;
  const prober = setInterval(async () => {
    if (probing) return;
    probing = true;
    await Promise.all(
      [...endpoints].map(async ([endpoint, state]) => {
        const ok = await probe(endpoint);
        // The endpoint may have been removed while probed.
        if (endpoints.get(endpoint) === state) state.ready = ok;
      }),
    );
    probing = false;
  }, options.probeEveryMs ?? 100);

  const server: Server = createServer((client) => {
    const ready = balancer.ready();
    if (ready.length === 0) {
      balancer.refused++;
      client.destroy();
      return;
    }
    const endpoint = ready[next++ % ready.length]!;
    balancer.connections.set(endpoint, (balancer.connections.get(endpoint) ?? 0) + 1);
    const { hostname, port } = new URL(endpoint);
    const upstream = connect(Number(port), hostname);
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
      socket.on('error', () => {
        client.destroy();
        upstream.destroy();
      });
    }
    client.pipe(upstream);
    upstream.pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return Object.assign(balancer, { url: `http://127.0.0.1:${port}` });
}
