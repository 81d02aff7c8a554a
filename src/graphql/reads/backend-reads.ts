/**
 * The small base the reading parts of a request stand on: a root field's window (translate.ts)
 * and the join batcher (batch-joins.ts) read the backend through it, and `RequestState`
 * implements it. They used to take `RequestState` itself, which constructs the batcher and holds
 * the prefetcher: a circle of four files (issue 26, circle 3).
 */
import type { BackendRead, BackendReader, BackendWriter, BeforeWrite, GraphqlLimits, ReadPolicy, WriteObserver, WritePolicy } from '../types.js';

export interface EngineSettings {
  readonly limits: GraphqlLimits;
  readonly reader: BackendReader;
  /** Largest URL-encoded `filter` a batched read may send before it is split (default 6144). */
  readonly maxFilterBytes: number;
  /** The caller's permission per read (readFilter, projectResponse); absent = read as the backend allows. */
  readonly readPolicy?: ReadPolicy | undefined;
  /** Where mutations write (writes/); absent = the app's mutations answer BACKEND_UNAVAILABLE. */
  readonly writer?: BackendWriter | undefined;
  /** The ACL's decision per backend write (SPEC §6.4); absent = write as the backend allows. */
  readonly writePolicy?: WritePolicy | undefined;
  /** Told of each backend write (webhooks and recording see GraphQL writes). */
  readonly onWrite?: WriteObserver | undefined;
  /** Reads a single-document write's state before it is sent, when someone listens (subscriptions). */
  readonly beforeWrite?: BeforeWrite | undefined;
  /** The app's uri (for the exchanges its writes are). */
  readonly appUri?: string;
}

/** One request's reads: counted, decided by the read policy, and shown to the client as it may see them. */
export interface BackendReads {
  readonly settings: EngineSettings;
  /** Join loads asked for, loads answered by an equal queued load, batches dispatched (for `verbose`). */
  readonly joinStats: { loads: number; shared: number; batches: number };
  /** One backend read, counted against the budget; failures become GraphQL field errors with a code. */
  read(read: BackendRead): Promise<unknown[]>;
  /** What the client sees of documents `read` returned (each under its read's projection). */
  present(docs: unknown[]): unknown[];
  /** One document as the client sees it. */
  presentOne(doc: unknown): unknown;
}
