/**
 * An HTTP relay in front of a backend that can hold the GETs whose path matches until the test
 * opens the gate, and passes everything else as it is: a backend read made to last exactly as
 * long as a test needs (identical concurrent queries join one execution while it is held).
 */
import type { TestServer } from './http-servers.js';
import { startReadRelay } from './slow-reads.js';

export interface GatedReads extends TestServer {
  /** Holds the GETs whose path (without the query) `matches` from now on, until `open`. */
  shut(matches: (path: string) => boolean): void;
  /** Lets every held read go on, and the later ones pass. */
  open(): void;
  /** Reads held now. */
  readonly held: number;
}

export async function startGatedReads(target: string): Promise<GatedReads> {
  let matches: ((path: string) => boolean) | null = null;
  let waiting: Array<() => void> = [];
  const server = await startReadRelay(target, async (req) => {
    if (req.method === 'GET' && matches?.(new URL(req.url ?? '/', 'http://relay').pathname)) await new Promise<void>((resolve) => waiting.push(resolve));
  });
  const relay = Object.assign(server, {
    shut(next: (path: string) => boolean) {
      matches = next;
    },
    open() {
      matches = null;
      const go = waiting;
      waiting = [];
      for (const resolve of go) resolve();
    },
  });
  // A getter (Object.assign would copy the count once).
  return Object.defineProperty(relay, 'held', { get: () => waiting.length }) as GatedReads;
}
