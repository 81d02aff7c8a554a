/** A webhook target on a loopback port that records what it receives and answers as each test scripts it. */
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import { startHttpServer, type TestServer } from './http-servers.js';

export interface Received {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
  /** performance.now() when the request's body had arrived. */
  at: number;
}

export type Answer = { status?: number; headers?: Record<string, string>; body?: string; delayMs?: number } | 'hang';

/** A webhook target on a loopback port: records every request, answers with `answer(request, index)`. */
export interface Target extends TestServer {
  received: Received[];
  /** Requests to one path. */
  on(path: string): Received[];
  answer: (req: Received, index: number) => Answer;
  /** Releases hanging requests (answers 200) and forgets them. */
  release(): void;
}

export async function startTarget(answer: Target['answer'] = () => ({ status: 200, body: 'ok' })): Promise<Target> {
  const hanging: ServerResponse[] = [];
  const target = {} as Target;
  target.received = [];
  target.answer = answer;
  const server = await startHttpServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const received: Received = { method: req.method ?? '', url: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks).toString('utf8'), at: performance.now() };
      const index = target.received.push(received) - 1;
      const a = target.answer(received, index);
      if (a === 'hang') {
        hanging.push(res);
        return;
      }
      const send = () => {
        if (res.destroyed) return;
        res.writeHead(a.status ?? 200, { 'content-type': 'text/plain', ...a.headers });
        res.end(a.body ?? '');
      };
      if (a.delayMs) setTimeout(send, a.delayMs);
      else send();
    });
  });
  return Object.assign(target, server, {
    on: (path: string) => target.received.filter((r) => r.url === path),
    release() {
      for (const res of hanging.splice(0)) if (!res.destroyed) res.writeHead(200).end('released');
    },
  });
}
