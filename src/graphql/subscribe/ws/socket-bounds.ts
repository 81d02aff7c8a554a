/**
 * How many WebSockets may be open (issue 53, item 9b): per client address (an IPv4 address or an
 * IPv6 /64, as every per-address bound counts), per principal, and per process. A socket costs a
 * file descriptor and buffers before it subscribes to anything, so sockets are bounded apart from
 * subscriptions. The process bound stays below half the open-file limit, so a process full of
 * sockets still has descriptors to answer a health probe and to reach Redis and the backend.
 */
import { readFileSync } from 'node:fs';
import type { WebSocketBounds } from '../../../config/subscriptions-config.js';
import { clientAddressBucket } from '../../../net/client-address.js';

export interface Refusal {
  readonly status: 429 | 503;
  /** The setting that refused (`maxPerAddress`, `maxPerPrincipal`, `maxPerProcess`). */
  readonly bound: 'maxPerAddress' | 'maxPerPrincipal' | 'maxPerProcess';
  readonly message: string;
}

/** One admitted socket's place in the counts; `release` once when its connection closes. */
export interface Admission {
  readonly address: string;
  /** Counts the socket for its principal (anonymous callers are bounded by their address). */
  claim(principalId: string | null): Refusal | null;
  release(): void;
}

export class SocketBounds {
  private readonly byAddress = new Map<string, number>();
  private readonly byPrincipal = new Map<string, number>();
  private open = 0;
  /** `maxPerProcess`, or less when the open-file limit is low (see `capped`). */
  readonly maxPerProcess: number;

  constructor(
    private readonly b: WebSocketBounds,
    openFileLimit: number | null = softOpenFileLimit(),
  ) {
    this.maxPerProcess = openFileLimit === null ? b.maxPerProcess : Math.max(1, Math.min(b.maxPerProcess, Math.floor(openFileLimit / 2)));
  }

  get capped(): boolean {
    return this.maxPerProcess < this.b.maxPerProcess;
  }

  get size(): number {
    return this.open;
  }

  /** Counts a socket of `clientIp` before its upgrade is answered (and before credentials are checked). */
  admit(clientIp: string): Admission | Refusal {
    if (this.open >= this.maxPerProcess)
      return { status: 503, bound: 'maxPerProcess', message: `this replica holds its most WebSockets (${this.maxPerProcess}, subscriptions.webSockets.maxPerProcess); retry later` };
    const address = clientAddressBucket(clientIp);
    const fromAddress = this.byAddress.get(address) ?? 0;
    if (fromAddress >= this.b.maxPerAddress)
      return { status: 429, bound: 'maxPerAddress', message: `too many WebSockets from this address (${this.b.maxPerAddress} open, subscriptions.webSockets.maxPerAddress); close one first` };
    this.byAddress.set(address, fromAddress + 1);
    this.open++;
    let principal: string | null = null;
    let released = false;
    return {
      address,
      claim: (principalId) => {
        if (released || principal !== null || principalId === null) return null;
        const count = this.byPrincipal.get(principalId) ?? 0;
        if (count >= this.b.maxPerPrincipal)
          return { status: 429, bound: 'maxPerPrincipal', message: `too many WebSockets of this caller (${this.b.maxPerPrincipal} open, subscriptions.webSockets.maxPerPrincipal); close one first` };
        this.byPrincipal.set(principalId, count + 1);
        principal = principalId;
        return null;
      },
      release: () => {
        if (released) return;
        released = true;
        this.open--;
        decrement(this.byAddress, address);
        if (principal !== null) decrement(this.byPrincipal, principal);
      },
    };
  }
}

export function isRefusal(value: Admission | Refusal): value is Refusal {
  return 'bound' in value;
}

function decrement(map: Map<string, number>, key: string): void {
  const n = (map.get(key) ?? 1) - 1;
  if (n <= 0) map.delete(key);
  else map.set(key, n);
}

/** The soft `RLIMIT_NOFILE` (Linux: /proc/self/limits), or null where it cannot be read. */
export function softOpenFileLimit(): number | null {
  try {
    const line = readFileSync('/proc/self/limits', 'utf8')
      .split('\n')
      .find((l) => l.startsWith('Max open files'));
    const soft = line?.slice('Max open files'.length).trim().split(/\s+/)[0];
    const n = Number(soft);
    return Number.isInteger(n) && n > 0 ? n : null;
  } catch {
    return null;
  }
}
