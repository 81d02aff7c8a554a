/**
 * Reloading the configuration without a restart (SPEC §15), one sequence in one file as the
 * shutdown is: on SIGHUP (cli/commands/start.ts) or when the file changes (a poll), the WHOLE
 * file is read and validated again. Invalid: the running config is kept and one log line names
 * every problem. Valid: each registered Reloadable whose path changed gets the new config; any
 * other changed key is logged once as needing a restart and is not applied.
 *
 * What reloads is what registers here (app.ts, `reloadables`): `limits.policies` (the limiter
 * recompiles; counters live in Redis under a policy's name and window, so those survive) and
 * `cors` (the CORS stage's CorsSettings). Another section becomes reloadable with one entry
 * `{ path: 'cache.rules', apply: (next) => cache.applyRules(next.cache.rules) }` in that list;
 * the docs (docs/configuration.md) list what reloads.
 *
 * Everything here is synchronous (read, parse, validate, apply): reloads never interleave, and a
 * request sees either the old set or the new one. Signals arriving together are coalesced into
 * one reload (a storm of SIGHUPs costs one parse per event-loop turn).
 */
import { readFileSync, unwatchFile, watchFile } from 'node:fs';
import { resolve } from 'node:path';
import { ConfigError, loadConfigText, readProblem } from './config/load.js';
import type { OutriggerConfig } from './config/types.js';
import type { Logger } from './observability/logger.js';

/** A part that takes a new value of one config path (`cors`, `limits.policies`) while running. */
export interface Reloadable {
  /** Dotted path in the config; a change under it is this part's to apply. */
  readonly path: string;
  apply(next: OutriggerConfig): void;
}

/** How long a changed file must stay unchanged before it is read (an editor's or a copy's writes land within it). */
const SETTLE_MS = 300;

export type ReloadTrigger = 'SIGHUP' | 'file change';

/** What one reload did, for the caller and the tests. */
export type ReloadOutcome = { kind: 'invalid'; problems: string[] } | { kind: 'unchanged' } | { kind: 'applied'; applied: string[]; needsRestart: string[] };

export class ConfigReloader {
  private readonly file: string;
  /** The text last read (by either trigger): the poll reloads only when the file says something new. */
  private lastText: string | null = null;
  private scheduled: ReloadTrigger | null = null;

  constructor(
    /** The running config: what applied reloads write into, so every reader of it sees the current values. */
    private readonly current: OutriggerConfig,
    file: string,
    private readonly reloadables: readonly Reloadable[],
    private readonly logger: Logger,
  ) {
    this.file = resolve(file);
    this.lastText = readText(this.file);
  }

  /** Reload at the next turn of the event loop; requests made before then are one reload. */
  schedule(trigger: ReloadTrigger): void {
    if (this.scheduled !== null) return;
    this.scheduled = trigger;
    setImmediate(() => {
      this.scheduled = null;
      this.reload(trigger);
    });
  }

  /** Reads, validates and applies the file now; logs one line per outcome (two when some keys also need a restart). */
  reload(trigger: ReloadTrigger): ReloadOutcome {
    const { logger, file } = this;
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch (error) {
      this.lastText = null;
      return this.refuse(trigger, [readProblem(error, file)]);
    }
    this.lastText = text;
    let next: OutriggerConfig;
    try {
      next = loadConfigText(text, file).config;
    } catch (error) {
      if (error instanceof ConfigError) return this.refuse(trigger, error.problems);
      throw error;
    }
    const paths = this.reloadables.map((r) => r.path);
    const changed = this.reloadables.filter((r) => !sameJson(valueAt(this.current, r.path), valueAt(next, r.path)));
    const needsRestart = changedPaths(this.current, next, '', new Set(paths));
    const applied: string[] = [];
    for (const part of changed) {
      try {
        part.apply(next);
        setValueAt(this.current, part.path, valueAt(next, part.path));
        applied.push(part.path);
      } catch (error) {
        logger.error({ trigger, file, path: part.path, err: String(error) }, `config reload: applying ${part.path} failed; it keeps its running value`);
      }
    }
    if (changed.length === 0 && needsRestart.length === 0) {
      logger.info({ trigger, file }, 'config reload: nothing changed');
      return { kind: 'unchanged' };
    }
    if (applied.length) logger.info({ trigger, file, applied }, `config reload: applied ${applied.join(', ')}`);
    if (needsRestart.length) {
      logger.warn({ trigger, file, needsRestart }, `config reload: ${needsRestart.join(', ')} changed; needs a restart, not applied (reloadable: ${paths.join(', ')})`);
    }
    return { kind: 'applied', applied, needsRestart };
  }

  /**
   * Polls the file every `intervalMs` (its stat, not its text; the text only when the stat
   * changed) and reloads when it says something new and has stopped changing for SETTLE_MS (a
   * file written in pieces is not read half-written). A poll, not fs.watch: editors and
   * Kubernetes replace a file (a rename, a ConfigMap's symlink swap), which a watch on the old
   * inode misses, and fs.watch differs per platform; one stat a few seconds apart costs nothing.
   */
  watch(intervalMs: number): () => void {
    let settle: NodeJS.Timeout | undefined;
    const onStat = () => {
      clearTimeout(settle);
      settle = setTimeout(() => {
        const text = readText(this.file);
        if (text === null || text !== this.lastText) this.schedule('file change');
      }, SETTLE_MS);
      settle.unref();
    };
    watchFile(this.file, { interval: intervalMs, persistent: false }, onStat);
    return () => {
      clearTimeout(settle);
      unwatchFile(this.file, onStat);
    };
  }

  private refuse(trigger: ReloadTrigger, problems: string[]): ReloadOutcome {
    this.logger.error({ trigger, file: this.file, problems }, `config reload refused, the running config is kept: ${problems.join('; ')}`);
    return { kind: 'invalid', problems };
  }
}

function readText(file: string): string | null {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return null;
  }
}

function sameJson(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

function isMapping(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function valueAt(config: OutriggerConfig, path: string): unknown {
  let value: unknown = config;
  for (const key of path.split('.')) value = isMapping(value) ? value[key] : undefined;
  return value;
}

function setValueAt(config: OutriggerConfig, path: string, value: unknown): void {
  const keys = path.split('.');
  let at: unknown = config;
  for (const key of keys.slice(0, -1)) at = isMapping(at) ? at[key] : undefined;
  if (isMapping(at)) at[keys.at(-1)!] = value;
}

/**
 * The paths where `a` and `b` differ, outside the reloadable ones: mappings are walked, a list or
 * a value is one path (`listen.port`, `users.static`). Values are never named, only keys: a
 * changed secret shows as its key.
 */
function changedPaths(a: unknown, b: unknown, prefix: string, reloadable: ReadonlySet<string>): string[] {
  if (reloadable.has(prefix)) return [];
  if (!isMapping(a) || !isMapping(b)) return sameJson(a, b) ? [] : [prefix || '(root)'];
  const out: string[] = [];
  for (const key of new Set([...Object.keys(a), ...Object.keys(b)])) out.push(...changedPaths(a[key], b[key], prefix ? `${prefix}.${key}` : key, reloadable));
  return out;
}
