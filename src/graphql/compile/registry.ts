/**
 * The apps a replica serves: compiled once per version, found by request path (the uri equal to
 * it: an app is served on its own path only, issue 53). The server keeps one registry per service and feeds it from its
 * store (at start, on writes, and on pub/sub notices from other replicas).
 */
import { ValidationError } from '../../errors.js';
import { appUriOf, type GraphqlApp } from '../app-document.js';
import { appVersion, compileApp, type CompiledApp, type CompileOptions } from './compile-app.js';
import { DocumentCache } from '../limits/document-cache.js';

export interface RegistryOptions extends CompileOptions {
  /** Told about a stored app that no longer validates (it is not served); e.g. log it. */
  readonly onInvalidApp?: (app: GraphqlApp, problems: string[]) => void;
}

export type AppLookup = { found: true; app: CompiledApp } | { found: false; reason: 'unknown' | 'disabled' };

export class GraphqlAppRegistry {
  /** By `_id` (or uri for apps without one). */
  private readonly byKey = new Map<string, CompiledApp>();
  private byUri = new Map<string, CompiledApp>();
  private readonly opts: RegistryOptions;

  constructor(opts: RegistryOptions) {
    // One budget of parsed queries for all apps (issue 25): entries are keyed by app version.
    this.opts = { ...opts, documentCache: opts.documentCache ?? new DocumentCache() };
  }

  /** Replaces every app, reusing compiled ones whose document did not change. */
  replaceAll(apps: Iterable<GraphqlApp>): void {
    const keep = new Set<string>();
    for (const app of apps) {
      const key = keyOf(app);
      keep.add(key);
      this.tryUpsert(app);
    }
    for (const key of [...this.byKey.keys()]) if (!keep.has(key)) this.byKey.delete(key);
    this.reindex();
  }

  /** Adds or replaces one app. Throws ValidationError when the document is not valid. */
  upsert(app: GraphqlApp): CompiledApp {
    const key = keyOf(app);
    const existing = this.byKey.get(key);
    const compiled = existing && existing.version === appVersion(app) ? existing : compileApp(app, this.opts);
    this.byKey.set(key, compiled);
    this.reindex();
    return compiled;
  }

  remove(key: string): void {
    if (this.byKey.delete(key)) this.reindex();
  }

  /**
   * The app served at `path` (the request path after the GraphQL route, e.g. `/shop/v2`), by its
   * whole uri (`appUriOf`): no other app answers for a disabled one, and none for a longer path.
   */
  lookup(path: string): AppLookup {
    const app = this.byUri.get(appUriOf(path));
    if (!app) return { found: false, reason: 'unknown' };
    return app.enabled ? { found: true, app } : { found: false, reason: 'disabled' };
  }

  get size(): number {
    return this.byKey.size;
  }

  private tryUpsert(app: GraphqlApp): void {
    try {
      const key = keyOf(app);
      const existing = this.byKey.get(key);
      if (existing && existing.version === appVersion(app)) return;
      this.byKey.set(key, compileApp(app, this.opts));
    } catch (error) {
      if (!(error instanceof ValidationError)) throw error;
      this.byKey.delete(keyOf(app));
      this.opts.onInvalidApp?.(app, error.problems);
    }
  }

  private reindex(): void {
    const byUri = new Map<string, CompiledApp>();
    for (const app of this.byKey.values()) byUri.set(app.uri, app);
    this.byUri = byUri;
  }
}

function keyOf(app: GraphqlApp): string {
  return app._id ?? app.descriptor.uri;
}
