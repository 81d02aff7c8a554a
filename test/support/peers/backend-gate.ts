/**
 * The stand-in behind a gate, for rows that hold a moment open (issue 53 item 7's window, SPEC
 * §11.1's tool-call window): requests `held` matches wait while it is closed, answers `padded`
 * matches grow by PADDING spaces (a writer that does not read cannot take them).
 */
import http from 'node:http';
import type net from 'node:net';

export const PADDING = 32 * 1024 * 1024;

/** The stand-in behind a gate: requests `held` matches wait while it is closed; answers `padded` matches grow by PADDING spaces. */
export interface Gate {
  url: string;
  held: ((method: string, url: string) => boolean) | undefined;
  padded: ((method: string, url: string) => boolean) | undefined;
  /** Requests waiting at the gate. */
  waiting: number;
  release(): void;
  close(): Promise<void>;
}

export async function startGate(target: string): Promise<Gate> {
  let waiters: Array<() => void> = [];
  const forward = (req: http.IncomingMessage, res: http.ServerResponse, body: Buffer) => {
    const pad = gate.padded?.(req.method!, req.url!) === true;
    const up = http.request(target + req.url, { method: req.method, headers: req.headers }, (answer) => {
      const chunks: Buffer[] = [];
      answer.on('data', (c: Buffer) => chunks.push(c));
      answer.on('end', () => {
        const out = pad ? Buffer.concat([...chunks, Buffer.alloc(PADDING, 0x20)]) : Buffer.concat(chunks);
        const headers = { ...answer.headers, 'content-length': String(out.length) };
        delete headers['transfer-encoding'];
        res.writeHead(answer.statusCode!, headers);
        res.end(out);
      });
    });
    up.on('error', () => res.destroy());
    up.end(body);
  };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const go = () => forward(req, res, Buffer.concat(chunks));
      if (gate.held?.(req.method!, req.url!) !== true) return go();
      gate.waiting++;
      waiters.push(go);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const gate: Gate = {
    url: `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`,
    held: undefined,
    padded: undefined,
    waiting: 0,
    release() {
      gate.held = undefined;
      const go = waiters;
      waiters = [];
      gate.waiting = 0;
      for (const w of go) w();
    },
    close: () =>
      new Promise<void>((resolve) => {
        gate.release();
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
  return gate;
}
