import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';

// scripts/check-structure.mjs is what `npm run lint` runs to keep the layers; these rows run it on
// small fixture trees so a change to the script cannot quietly stop it from failing a loop.
const script = resolve(dirname(fileURLToPath(import.meta.url)), '../../../scripts/check-structure.mjs');

const RULES = `
export const LAYERS = [['base'], ['left', 'right'], ['top']];
export const STAGED_FEATURES = {};
export const SCRIPT_HOME = 'src/base';
export const LIMITS = { fileLines: 400, folderFiles: 15 };
`;

const roots: string[] = [];
afterEach(() => {
  for (const root of roots.splice(0)) rmSync(root, { recursive: true, force: true });
});

/** A project root with scripts/structure-rules.mjs and the given src/ files (path → text). */
function fixture(files: Record<string, string>, rules = RULES): string {
  const root = mkdtempSync(join(tmpdir(), 'structure-'));
  roots.push(root);
  for (const [path, text] of Object.entries({ 'scripts/structure-rules.mjs': rules, ...files })) {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), text);
  }
  return root;
}

function check(root: string): { status: number | null; out: string } {
  const run = spawnSync(process.execPath, [script, '--root', root], { encoding: 'utf8' });
  return { status: run.status, out: run.stdout + run.stderr };
}

// Every folder of the table present, each importing only downward: the tree the rows below break.
const GOOD = {
  'src/base/a.ts': 'export const a = 1;\n',
  'src/left/l.ts': "import { a } from '../base/a.js';\nexport const l = a;\n",
  'src/right/r.ts': "import { a } from '../base/a.js';\nexport const r = a;\n",
  'src/top/t.ts': "import { l } from '../left/l.js';\nimport { r } from '../right/r.js';\nexport const t = l + r;\n",
};

describe('check-structure', () => {
  it('passes a tree whose imports all run down the layers', () => {
    const { status, out } = check(fixture(GOOD));
    expect(out).toContain('every import with the flow');
    expect(status).toBe(0);
  });

  it('fails an import into a higher layer', () => {
    const { status, out } = check(fixture({ ...GOOD, 'src/base/up.ts': "import { t } from '../top/t.js';\nexport const up = t;\n" }));
    expect(status).toBe(1);
    expect(out).toContain('src/base/up.ts → src/top/t.ts: against the flow (base is layer 0, top is layer 2)');
  });

  it('fails a loop between two folders of one layer, though no file imports itself back', () => {
    const { status, out } = check(
      fixture({
        ...GOOD,
        'src/left/l2.ts': "import { r } from '../right/r.js';\nexport const l2 = r;\n",
        'src/right/r2.ts': "import { l } from '../left/l.js';\nexport const r2 = l;\n",
      }),
    );
    expect(out).not.toContain('import circle');
    expect(status).toBe(1);
    expect(out).toContain('src/left/l2.ts → src/right/r.ts: sideways (left and right share layer 1');
    expect(out).toContain('src/right/r2.ts → src/left/l.ts: sideways (right and left share layer 1');
  });

  it('fails a loop between folders of different layers (its upward arrow)', () => {
    const { status, out } = check(fixture({ ...GOOD, 'src/left/l3.ts': "import { t } from '../top/t.js';\nexport const l3 = t;\n" }));
    expect(status).toBe(1);
    expect(out).toContain('src/left/l3.ts → src/top/t.ts: against the flow (left is layer 1, top is layer 2)');
  });

  it('fails a folder with no layer, and a layer naming no folder', () => {
    const extra = { ...GOOD, 'src/stray/s.ts': 'export const s = 1;\n' };
    const rules = RULES.replace("['top']", "['top', 'gone']");
    const { status, out } = check(fixture(extra, rules));
    expect(status).toBe(1);
    expect(out).toContain('src/stray/s.ts: its folder "stray" has no layer');
    expect(out).toContain('layer 2 names "gone", which is no folder or root file of src/');
  });
});
