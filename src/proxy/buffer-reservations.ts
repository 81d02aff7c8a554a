/**
 * The memory request buffering may take (SPEC §2, upstream.bufferBodyBytes): every body being
 * read reserves its size first, all together at most `total` bytes (upstream.bufferTotalBytes)
 * and one client address at most `perClient` (upstream.bufferBytesPerClient, issue 34 item 9:
 * one address announcing large bodies and trickling them could reserve nearly all of it, and
 * every other client's bodies then streamed and took upstream slots). A proxied body that finds
 * no room streams as if buffering were off. Own routes' bodies, which must be read whole, reserve
 * here too as their bytes arrive (http/body.ts, issue 53): one bound for every door; theirs are
 * refused (429 or 503) when they find no room.
 */
export class BufferReservations {
  private reserved = 0;
  /** Bytes reserved per client address (its /64 for IPv6); an entry goes when it falls to 0. */
  private readonly byClient = new Map<string, number>();

  constructor(
    private readonly total: number,
    private readonly perClient: number,
  ) {}

  /** Reserves `bytes` for `client` when both bounds allow it; answers whether it did. */
  reserve(client: string, bytes: number): boolean {
    return this.tryReserve(client, bytes) === 'ok';
  }

  /** The same, answering which bound refused (own routes name it in their 429 or 503). */
  tryReserve(client: string, bytes: number): 'ok' | 'client' | 'total' {
    const held = this.byClient.get(client) ?? 0;
    if (held + bytes > this.perClient) return 'client';
    if (this.reserved + bytes > this.total) return 'total';
    this.byClient.set(client, held + bytes);
    this.reserved += bytes;
    return 'ok';
  }

  release(client: string, bytes: number): void {
    this.reserved -= bytes;
    const left = (this.byClient.get(client) ?? bytes) - bytes;
    if (left > 0) this.byClient.set(client, left);
    else this.byClient.delete(client);
  }

  /** Bytes reserved now, all clients together (a gauge). */
  get bytes(): number {
    return this.reserved;
  }
}
