/**
 * Keeps the backend's declared aggregations in step with an app when it is saved: for each
 * collection an aggregation mapping runs on, the collection's `aggrs` metadata gets the app's
 * declared aggregations (read with `GET {coll}/_meta`, written back with `PATCH {coll}`, or
 * `PUT {coll}` when the collection does not exist yet, as RESTHeart's collection metadata is
 * written). Entries with other names are kept as they are. The write runs before the app is
 * stored: an app whose aggregations the backend refused is not saved.
 */
import { STATUS_CODES } from 'node:http';
import { OutriggerError } from '../../../errors.js';
import { isPlainObject } from '../../../util/objects.js';
import { declaredAggregationsOf } from './declared.js';

export interface SyncTarget {
  /** Backend origin and prefix (`graphql.backend.url`). */
  readonly baseUrl: string;
  /** `graphql.backend.collectionPath`. */
  readonly collectionPath: string;
  readonly defaultDb: string;
  /** Credentials for the metadata write: the app writer's identity, or the service's. */
  readonly headers: Record<string, string>;
}

function failed(what: string, detail: string): OutriggerError {
  return new OutriggerError(502, 'AGGREGATION_SYNC_FAILED', `the app was not saved: declaring its aggregations on ${what} failed: ${detail}`);
}

export async function syncDeclaredAggregations(app: { _id?: string; descriptor: { uri: string }; mappings: Record<string, Record<string, unknown>> }, target: SyncTarget): Promise<number> {
  let written = 0;
  for (const { db, collection, aggrs } of declaredAggregationsOf(app, target.defaultDb).values()) {
    const path = target.collectionPath.replaceAll('{db}', encodeURIComponent(db)).replaceAll('{collection}', encodeURIComponent(collection));
    const url = `${target.baseUrl.replace(/\/+$/, '')}${path}`;
    const what = `${db}/${collection}`;
    const call = async (method: string, suffix: string, body?: unknown): Promise<Response> => {
      try {
        return await fetch(`${url}${suffix}`, {
          method,
          headers: { accept: 'application/json', ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...target.headers },
          ...(body === undefined ? {} : { body: JSON.stringify(body) }),
          signal: AbortSignal.timeout(10_000),
        });
      } catch {
        throw failed(what, 'the backend could not be reached');
      }
    };
    const current = await call('GET', '/_meta');
    let existing: unknown[] = [];
    if (current.status === 200) {
      const meta = (await current.json().catch(() => undefined)) as unknown;
      if (isPlainObject(meta) && Array.isArray(meta.aggrs)) existing = meta.aggrs;
    } else {
      await current.body?.cancel();
      if (current.status !== 404) throw failed(what, `reading its metadata answered ${current.status} ${STATUS_CODES[current.status] ?? ''}`.trimEnd());
    }
    const ours = new Set(aggrs.map((a) => a.uri));
    const merged = [...existing.filter((a) => !(isPlainObject(a) && typeof a.uri === 'string' && ours.has(a.uri))), ...aggrs];
    const res = current.status === 404 ? await call('PUT', '', { aggrs: merged }) : await call('PATCH', '', { aggrs: merged });
    await res.body?.cancel();
    if (res.status < 200 || res.status > 299) throw failed(what, `writing its metadata answered ${res.status} ${STATUS_CODES[res.status] ?? ''}`.trimEnd());
    written += aggrs.length;
  }
  return written;
}
