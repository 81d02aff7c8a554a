import { connect, type Socket } from 'node:net';

/** Opens a raw connection to a loopback server and writes `head` (and `body`) as given. */
export function rawClient(base: string, head: string, body?: Buffer | string): Promise<Socket> {
  const url = new URL(base);
  return new Promise((resolve, reject) => {
    const socket = connect({ host: url.hostname, port: Number(url.port) }, () => {
      socket.write(head);
      if (body !== undefined) socket.write(body);
      resolve(socket);
    });
    socket.on('error', () => {});
    socket.once('error', reject);
    socket.setNoDelay(true);
  });
}

/** Everything the server sends on a raw connection until it closes it (or `ms` pass). */
export function readUntilClosed(socket: Socket, ms: number): Promise<{ text: string; closed: boolean }> {
  return new Promise((resolve) => {
    let text = '';
    socket.setEncoding('utf8');
    socket.on('data', (c: string) => (text += c));
    const timer = setTimeout(() => resolve({ text, closed: false }), ms);
    socket.once('close', () => {
      clearTimeout(timer);
      resolve({ text, closed: true });
    });
  });
}

/** A distinct loopback address per client index, sent as X-Forwarded-For through a trusted 127.0.0.1. */
export function loopbackClientIp(i: number): string {
  return `127.${10 + Math.floor(i / 250)}.${(i % 250) + 1}.7`;
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** The `outrigger_upstream_slots` gauges from /_metrics. */
export async function upstreamSlots(base: string): Promise<{ inUse: number; waiting: number }> {
  const text = await (await fetch(`${base}/_metrics`)).text();
  const read = (state: string) => Number(new RegExp(`outrigger_upstream_slots\\{state="${state}"\\} (\\d+)`).exec(text)?.[1] ?? NaN);
  return { inUse: read('in-use'), waiting: read('waiting') };
}

/** Polls until `check` holds or `ms` pass; answers whether it held. */
export async function eventually(check: () => Promise<boolean> | boolean, ms: number, everyMs = 100): Promise<boolean> {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    if (await check()) return true;
    await sleep(everyMs);
  }
  return check();
}
