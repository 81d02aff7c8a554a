/**
 * Write-time analysis of a `$typeResolver`: which entries can never be chosen (their predicate
 * cannot hold, or every document it holds for is taken by an earlier entry: a 400) and which pairs
 * overlap (one document satisfies both, so the order written decides: a warning). Predicates are
 * boolean formulas over a few atoms; we enumerate the atoms' truth assignments that a JSON
 * document could produce (field-eq implies field-exists, a field has one value, a.b exists only if
 * a does, value-eq fixes the whole value) and look for a witness.
 */
import { canonicalKey } from '../../values/ejson.js';
import { readPath } from '../../values/paths.js';
import { describe, matches, type Predicate } from './predicate.js';

type Atom = { kind: 'exists'; field: string } | { kind: 'eq'; field: string; key: string; value: unknown } | { kind: 'value'; key: string; value: unknown };

/** Up to 2^16 assignments; resolvers with more distinct atoms are checked only for parse errors. */
const MAX_ATOMS = 16;

function atomKey(a: Atom): string {
  return a.kind === 'exists' ? `e:${a.field}` : a.kind === 'eq' ? `q:${a.field}:${a.key}` : `v:${a.key}`;
}

function collectAtoms(p: Predicate, out: Map<string, Atom>): void {
  switch (p.kind) {
    case 'field-exists':
      for (const field of p.fields) {
        const a: Atom = { kind: 'exists', field };
        out.set(atomKey(a), a);
      }
      return;
    case 'field-eq': {
      const a: Atom = { kind: 'eq', field: p.field, key: p.key, value: p.value };
      out.set(atomKey(a), a);
      const e: Atom = { kind: 'exists', field: p.field };
      out.set(atomKey(e), e);
      return;
    }
    case 'value-eq': {
      const a: Atom = { kind: 'value', key: p.key, value: p.value };
      out.set(atomKey(a), a);
      return;
    }
    case 'and':
    case 'or':
      p.items.forEach((i) => collectAtoms(i, out));
      return;
    case 'not':
      collectAtoms(p.item, out);
  }
}

function evaluate(p: Predicate, truth: Map<string, boolean>): boolean {
  switch (p.kind) {
    case 'field-exists':
      return p.fields.every((field) => truth.get(`e:${field}`) === true);
    case 'field-eq':
      return truth.get(`q:${p.field}:${p.key}`) === true;
    case 'value-eq':
      return truth.get(`v:${p.key}`) === true;
    case 'and':
      return p.items.every((i) => evaluate(i, truth));
    case 'or':
      return p.items.some((i) => evaluate(i, truth));
    case 'not':
      return !evaluate(p.item, truth);
  }
}

function consistent(atoms: readonly Atom[], truth: Map<string, boolean>): boolean {
  const fixed = atoms.find((a) => a.kind === 'value' && truth.get(atomKey(a)));
  if (fixed && fixed.kind === 'value') {
    // The whole value is known: every other atom must say what that value says.
    for (const a of atoms) {
      const t = truth.get(atomKey(a)) as boolean;
      if (a.kind === 'value' && t !== (a.key === fixed.key)) return false;
      if (a.kind === 'exists' && t !== (readPath(fixed.value, a.field) !== undefined)) return false;
      if (a.kind === 'eq') {
        const v = readPath(fixed.value, a.field);
        if (t !== (v !== undefined && canonicalKey(v) === a.key)) return false;
      }
    }
    return true;
  }
  const valueOf = new Map<string, { key: string; value: unknown }>();
  for (const a of atoms) {
    if (!truth.get(atomKey(a))) continue;
    if (a.kind === 'eq') {
      if (truth.get(`e:${a.field}`) !== true) return false;
      const other = valueOf.get(a.field);
      if (other && other.key !== a.key) return false;
      valueOf.set(a.field, { key: a.key, value: a.value });
    }
    if (a.kind === 'exists') {
      const parts = a.field.split('.');
      for (let i = 1; i < parts.length; i++) if (truth.get(`e:${parts.slice(0, i).join('.')}`) === false) return false;
    }
  }
  // A field with a known value decides what exists and equals below it.
  for (const [field, { value }] of valueOf) {
    for (const a of atoms) {
      if (a.kind === 'value' || !a.field.startsWith(`${field}.`)) continue;
      const inner = readPath(value, a.field.slice(field.length + 1));
      const t = truth.get(atomKey(a)) as boolean;
      if (a.kind === 'exists' && t !== (inner !== undefined)) return false;
      if (a.kind === 'eq' && t !== (inner !== undefined && canonicalKey(inner) === a.key)) return false;
    }
  }
  return true;
}

function witness(atoms: readonly Atom[], truth: Map<string, boolean>): string {
  const parts = atoms.map((a) => {
    const t = truth.get(atomKey(a));
    if (a.kind === 'exists') return `${a.field} ${t ? 'exists' : 'is missing'}`;
    if (a.kind === 'eq') return t ? `${a.field} is ${JSON.stringify(a.value)}` : '';
    return t ? `the value is ${JSON.stringify(a.value)}` : '';
  });
  return parts.filter((s) => s !== '').join(', ') || 'any document';
}

export interface ResolverEntry {
  readonly type: string;
  readonly predicate: Predicate;
}

/**
 * What the write says of a parsed resolver, each with `path.<Type>` in front. RESTHeart's rule
 * decides (SPEC §6.2): the first predicate in the order written that holds picks the type. So an
 * overlap (one document matching two entries) is a warning naming the type that wins it; an
 * entry that can never be picked (its predicate never holds, or every document it holds for is
 * taken by an earlier entry) is a problem.
 */
export function analyzeResolver(path: string, entries: readonly ResolverEntry[]): { problems: string[]; warnings: string[] } {
  const atomMap = new Map<string, Atom>();
  for (const e of entries) collectAtoms(e.predicate, atomMap);
  const atoms = [...atomMap.values()];
  if (atoms.length > MAX_ATOMS) return { problems: [], warnings: [] };
  const problems: string[] = [];
  const warnings: string[] = [];
  const holds = entries.map(() => false);
  const wins = entries.map(() => false);
  const overlaps = new Map<string, string>();
  for (let mask = 0; mask < 1 << atoms.length; mask++) {
    const truth = new Map<string, boolean>();
    atoms.forEach((a, i) => truth.set(atomKey(a), (mask & (1 << i)) !== 0));
    if (!consistent(atoms, truth)) continue;
    const holding = entries.map((e) => evaluate(e.predicate, truth));
    const first = holding.indexOf(true);
    if (first < 0) continue;
    wins[first] = true;
    holding.forEach((h, i) => {
      if (!h) return;
      holds[i] = true;
      for (let j = i + 1; j < entries.length; j++) {
        if (!holding[j]) continue;
        const key = `${i}:${j}`;
        if (!overlaps.has(key)) overlaps.set(key, witness(atoms, truth));
      }
    });
  }
  entries.forEach((e, i) => {
    if (!holds[i]) problems.push(`${path}.${e.type}: the predicate "${describe(e.predicate)}" can never hold, so ${e.type} is unreachable`);
    else if (!wins[i]) {
      const earlier = entries
        .slice(0, i)
        .map((x) => x.type)
        .join(', ');
      problems.push(
        `${path}.${e.type}: every document "${describe(e.predicate)}" matches is matched first by an entry written before it (${earlier}), so ${e.type} is unreachable; write it earlier or narrow the others`,
      );
    }
  });
  for (const [key, example] of overlaps) {
    const [i, j] = key.split(':').map(Number) as [number, number];
    const a = entries[i] as ResolverEntry;
    const b = entries[j] as ResolverEntry;
    if (!wins[j]) continue; // already a problem
    warnings.push(
      `${path}.${b.type}: overlaps ${a.type}: a document can match both ("${describe(a.predicate)}" and "${describe(b.predicate)}", e.g. when ${example}); ${a.type}, written first, wins it`,
    );
  }
  return { problems, warnings };
}

/** The first entry whose predicate holds for `value`, as RESTHeart picks it. */
export function resolveEntry(entries: readonly ResolverEntry[], value: unknown): string | undefined {
  for (const e of entries) if (matches(e.predicate, value)) return e.type;
  return undefined;
}
