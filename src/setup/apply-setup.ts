import { readFileSync } from 'node:fs';
import { isDeepStrictEqual } from 'node:util';
import type { AppContext } from '../app-context.js';
import { parseYaml, readProblem } from '../config/load.js';
import { ValidationError } from '../errors.js';
import { isJsonObject } from '../util/objects.js';
import type { StoredDocument } from '../store/document-store.js';
import { permissionSetupKind } from './permission-kind.js';
import type { SetupKind } from './setup-kind.js';
import { didYouMean } from '../util/did-you-mean.js';

export interface SetupSummary {
  counts: Record<string, number>;
  changes: Array<{ section: string; id: string; change: 'created' | 'updated' | 'unchanged' }>;
  /** `<section>[i] (<id>): <warning>` for documents accepted with warnings (a `$typeResolver` overlap). */
  warnings: string[];
}

/**
 * `outrigger apply` and `acl.bootstrap`: upsert by `_id`, with the same validation as the HTTP
 * API, all or nothing — every problem of every document is reported and nothing is written
 * unless all of them are valid.
 */
export async function applySetupFile(context: AppContext, file: string, extraKinds: SetupKind[] = []): Promise<SetupSummary> {
  return applySetup(readSetupFile(file), [permissionSetupKind(context.config, context.permissions), ...extraKinds]);
}

export function readSetupFile(file: string): unknown {
  const problems: string[] = [];
  let text = '';
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new ValidationError([readProblem(error, file)]);
  }
  const parsed = parseYaml(text, file, problems);
  if (problems.length) throw new ValidationError(problems);
  return parsed;
}

/** With `offline`, only validates (no Redis): what `outrigger check` does with the bootstrap file. */
export async function applySetup(parsed: unknown, kinds: SetupKind[], options: { offline?: boolean } = {}): Promise<SetupSummary> {
  const problems: string[] = [];
  const root = parsed ?? {};
  if (!isJsonObject(root)) throw new ValidationError(['a setup file must be a mapping with permissions, apps and/or webhooks lists']);
  const known = new Set(kinds.map((k) => k.section));
  for (const key of Object.keys(root)) if (!known.has(key as SetupKind['section'])) problems.push(`${key}: not a setup section (use ${[...known].join(', ')})${didYouMean(key, known)}`);

  const plan: Array<{ kind: SetupKind; docs: StoredDocument[]; changes: SetupSummary['changes'] }> = [];
  const warnings: string[] = [];
  for (const kind of kinds) {
    const list = root[kind.section];
    if (list === undefined || list === null) continue;
    if (!Array.isArray(list)) {
      problems.push(`${kind.section}: must be a list of ${kind.noun} documents`);
      continue;
    }
    const docs: StoredDocument[] = [];
    const changes: SetupSummary['changes'] = [];
    const seen = new Set<string>();
    for (let i = 0; i < list.length; i++) {
      const entry = list[i] as unknown;
      const where = `${kind.section}[${i}]`;
      if (!isJsonObject(entry) || typeof entry._id !== 'string' || entry._id === '') {
        problems.push(`${where}: must be a ${kind.noun} document with a string _id (setup files upsert by _id)`);
        continue;
      }
      if (seen.has(entry._id)) problems.push(`${where}._id: ${entry._id} appears twice in ${kind.section}`);
      seen.add(entry._id);
      const existing = options.offline || !kind.store ? undefined : await kind.store.fetch(entry._id);
      const result = await kind.validate(entry, existing);
      if (!result.ok) {
        problems.push(...result.problems.map((p) => `${where} (${entry._id}): ${p}`));
        continue;
      }
      docs.push(result.doc);
      warnings.push(...(kind.warnings?.(result.doc) ?? []).map((w) => `${where} (${entry._id}): ${w}`));
      // Compared as stored (JSON), so an absent optional field and `undefined` are the same.
      const stored = JSON.parse(JSON.stringify(result.doc)) as unknown;
      changes.push({ section: kind.section, id: entry._id, change: !existing ? 'created' : isDeepStrictEqual(existing, stored) ? 'unchanged' : 'updated' });
    }
    if (kind.checkSet) {
      const others = options.offline || !kind.store ? [] : (await kind.store.fetchAll()).filter((d) => !seen.has(d._id));
      problems.push(...kind.checkSet([...others, ...docs]).map((p) => `${kind.section}: ${p}`));
    }
    plan.push({ kind, docs, changes });
  }
  if (problems.length) throw new ValidationError(problems);

  for (const { kind, docs, changes } of options.offline ? [] : plan) {
    const changed = new Set(changes.filter((c) => c.change !== 'unchanged').map((c) => c.id));
    await kind.store?.putMany(docs.filter((d) => changed.has(d._id)));
  }
  const all = plan.flatMap((p) => p.changes);
  const counts: Record<string, number> = { created: 0, updated: 0, unchanged: 0 };
  for (const c of all) counts[c.change]!++;
  return { counts, changes: all, warnings };
}
