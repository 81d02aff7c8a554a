/**
 * The bound on one `POST /mcp` answer (`mcp.maxResponseBytes`, by default
 * `graphql.maxResponseBytes`): the results of all its messages together, as bytes of the JSON
 * answer. A JSON-RPC batch holds up to MAX_BATCH messages, and the SDK dispatches them at once and
 * keeps every result until the last one is done; with each result holding up to a whole GraphQL
 * answer, one request held ten of them at once (twice each: text and `structuredContent`) and
 * took a process from 132 MB to 2 GB (issue 53). Here a request's tool calls run one after
 * another, each may use only what the earlier ones left, and once one did not fit the rest are
 * not run: what one request holds is bounded by this budget, whatever it asks.
 */
export class AnswerBudget {
  private used = 0;
  private tail: Promise<unknown> = Promise.resolve();
  /** Set once a result did not fit: the calls after it are not run. */
  private filledBy: string | null = null;

  constructor(readonly limit: number) {}

  /** Bytes the results still to come may take. */
  get left(): number {
    return Math.max(0, this.limit - this.used);
  }

  /** The tool whose result did not fit, if one did not. */
  get filled(): string | null {
    return this.filledBy;
  }

  /** Takes `bytes` if they fit; otherwise marks the budget filled (by `what`) and takes nothing. */
  take(bytes: number, what: string): boolean {
    if (this.filledBy === null && bytes <= this.left) {
      this.used += bytes;
      return true;
    }
    this.filledBy ??= what;
    return false;
  }

  /** Runs `task` once every earlier task of this request has settled: one tool call at a time. */
  serial<T>(task: () => Promise<T>): Promise<T> {
    const run = this.tail.then(task, task);
    this.tail = run.catch(() => {});
    return run;
  }
}

/**
 * The bytes `JSON.stringify(text)` would take, without making that copy: UTF-8 bytes, the quotes,
 * and what escaping adds (a backslash for `"` and `\`, one more byte for \b \t \n \f \r, five for
 * other control characters and lone surrogates).
 */
export function jsonStringBytes(text: string): number {
  let extra = 2;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 34 || c === 92) extra += 1;
    else if (c < 32) extra += c === 8 || c === 9 || c === 10 || c === 12 || c === 13 ? 1 : 5;
    else if (c >= 0xd800 && c <= 0xdfff) {
      const next = text.charCodeAt(i + 1);
      if (c <= 0xdbff && next >= 0xdc00 && next <= 0xdfff)
        i++; // a pair: four UTF-8 bytes, counted by byteLength
      else extra += 3; // \udXXX (6 bytes) where byteLength counts the replacement character (3)
    }
  }
  return Buffer.byteLength(text) + extra;
}
