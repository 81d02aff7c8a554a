#!/usr/bin/env node
// The house rules, checked from the code's own imports (type-only imports count: they tie two
// files together for a reader as much as a value import does). Run by `npm run lint` and so by CI.
//
//   node scripts/check-structure.mjs              every rule; exit 1 with one line per breach
//   node scripts/check-structure.mjs --graph      also print the folder-level import graph
//   node scripts/check-structure.mjs --root DIR   check DIR/src against DIR/scripts/structure-rules.mjs
//                                                 (test/unit/structure runs it on fixture trees)
//
// Rules (the layer table and stage orders live in scripts/structure-rules.mjs):
// 1. no import circle between files of src/;
// 2. every import runs with the flow: into the same folder, a folder of a strictly lower layer,
//    or an earlier stage of the same feature. Folders of one layer are peers and never import
//    each other, so no loop between folders can pass (a loop needs an arrow up or sideways);
//    every top folder of src/ has exactly one layer, and every name in the table is a folder;
// 3. no file of src/ over 400 lines, no folder with more than 15 source files directly in it;
// 4. Redis scripts (EVAL / EVALSHA / SCRIPT LOAD) only in src/store.
//
// Why our own script rather than dependency-cruiser: its current releases need Node 22, and
// eslint-plugin-import-x pulls a native resolver whose install script npm blocks here; the
// TypeScript compiler the project already has reads imports exactly (preProcessFile).
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import ts from 'typescript';

const rootArg = process.argv.indexOf('--root');
const root = rootArg > 0 ? resolve(process.argv[rootArg + 1]) : resolve(dirname(fileURLToPath(import.meta.url)), '..');
const { LAYERS, STAGED_FEATURES, SCRIPT_HOME, LIMITS } = await import(pathToFileURL(join(root, 'scripts', 'structure-rules.mjs')).href);
const src = join(root, 'src');
const SOURCE = /\.(ts|mts|mjs|tsx)$/;

function walk(dir) {
  const out = [];
  for (const name of readdirSync(dir)) {
    const full = join(dir, name);
    if (statSync(full).isDirectory()) {
      if (name === 'assets' || name === 'node_modules') continue;
      out.push(...walk(full));
    } else if (SOURCE.test(name) && !name.endsWith('.d.ts')) out.push(full);
  }
  return out;
}

const rel = (file) => relative(root, file).split(sep).join('/');
const files = walk(src);
const known = new Set(files.map(rel));

/** A relative specifier as the file it names: `./x.js` → `x.ts`, a folder → its index. */
function resolveImport(from, spec) {
  if (!spec.startsWith('.')) return null;
  const base = rel(resolve(dirname(join(root, from)), spec));
  const stem = base.replace(/\.(m?js|tsx?)$/, '');
  for (const candidate of [base, `${stem}.ts`, `${stem}.mts`, `${stem}.mjs`, `${stem}.tsx`, `${stem}/index.ts`]) if (known.has(candidate)) return candidate;
  return null;
}

const imports = new Map();
const texts = new Map();
for (const file of files) {
  const text = readFileSync(file, 'utf8');
  const name = rel(file);
  texts.set(name, text);
  const info = ts.preProcessFile(text, true, true);
  const targets = new Set();
  for (const ref of info.importedFiles) {
    const target = resolveImport(name, ref.fileName);
    if (target && target !== name) targets.add(target);
  }
  imports.set(name, [...targets].sort());
}

const problems = [];

// 1. Circles: Tarjan's strongly connected components.
{
  let index = 0;
  const idx = new Map(),
    low = new Map(),
    stack = [],
    onStack = new Set();
  const components = [];
  const strongConnect = (v) => {
    idx.set(v, index);
    low.set(v, index);
    index++;
    stack.push(v);
    onStack.add(v);
    for (const w of imports.get(v)) {
      if (!idx.has(w)) {
        strongConnect(w);
        low.set(v, Math.min(low.get(v), low.get(w)));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v), idx.get(w)));
    }
    if (low.get(v) === idx.get(v)) {
      const component = [];
      let w;
      do {
        w = stack.pop();
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      if (component.length > 1) components.push(component.sort());
    }
  };
  for (const v of [...imports.keys()].sort()) if (!idx.has(v)) strongConnect(v);
  for (const component of components) {
    const members = new Set(component);
    const ties = component.flatMap((a) =>
      imports
        .get(a)
        .filter((b) => members.has(b))
        .map((b) => `${a} → ${b}`),
    );
    problems.push(`import circle of ${component.length} files: ${ties.join('; ')}`);
  }
}

// 2. The flow. A file's place: its layer (top folder of src/), and inside a staged feature its stage.
function placeOf(file) {
  const parts = file.split('/').slice(1); // drop "src"
  const top = parts.length === 1 ? parts[0].replace(SOURCE, '') : parts[0];
  const layer = LAYERS.findIndex((names) => names.includes(top));
  const stages = STAGED_FEATURES[top];
  let stage = null;
  if (stages && parts.length > 2) stage = stages.indexOf(parts[1]) >= 0 ? stages.indexOf(parts[1]) : -2; // -2: a folder outside the order
  if (stages && parts.length === 2) stage = parts[1] === stages.entry ? Infinity : -1; // root: shared types (-1) or the entry
  return { top, layer, stage };
}
{
  const tops = new Set([...imports.keys()].map((file) => placeOf(file).top));
  const seen = new Map();
  LAYERS.forEach((names, layer) => {
    for (const name of names) {
      if (seen.has(name)) problems.push(`scripts/structure-rules.mjs: "${name}" is in layers ${seen.get(name)} and ${layer}; a folder has one place`);
      seen.set(name, layer);
      if (!tops.has(name)) problems.push(`scripts/structure-rules.mjs: layer ${layer} names "${name}", which is no folder or root file of src/; drop it or fix the name`);
    }
  });
}
for (const file of imports.keys()) {
  const place = placeOf(file);
  if (place.stage === -2)
    problems.push(
      `${file}: its folder is not a stage of src/${place.top} (${STAGED_FEATURES[place.top].join(' → ')}); add it to STAGED_FEATURES in scripts/structure-rules.mjs or move the file into a stage`,
    );
}
for (const [from, targets] of imports) {
  const a = placeOf(from);
  if (a.layer === -1) {
    problems.push(`${from}: its folder "${a.top}" has no layer in scripts/structure-rules.mjs; add it where it belongs`);
    continue;
  }
  for (const to of targets) {
    const b = placeOf(to);
    if (b.layer === -1) continue; // reported for its own file
    if (a.top !== b.top) {
      if (b.layer > a.layer) problems.push(`${from} → ${to}: against the flow (${a.top} is layer ${a.layer}, ${b.top} is layer ${b.layer}); move the shared part down or invert the dependency`);
      else if (b.layer === a.layer)
        problems.push(`${from} → ${to}: sideways (${a.top} and ${b.top} share layer ${a.layer}, whose folders are peers); give ${b.top} a lower layer, or move the shared part down`);
      continue;
    }
    if (a.stage === null || a.stage === undefined || b.stage === null || b.stage === undefined) continue;
    if (a.stage === -2 || b.stage === -2) continue;
    if (b.stage === Infinity && a.stage !== Infinity) problems.push(`${from} → ${to}: a stage imports its feature's entry point; take what it needs from the root's shared types`);
    else if (a.stage === -1 && b.stage >= 0) problems.push(`${from} → ${to}: a shared file at the root of src/${a.top} imports a stage; move what both need to the root, or the file into a stage`);
    else if (b.stage > a.stage && a.stage !== Infinity) problems.push(`${from} → ${to}: against the stage order of src/${a.top} (${STAGED_FEATURES[a.top].join(' → ')})`);
  }
}

// 3. Sizes.
const perFolder = new Map();
for (const [file, text] of texts) {
  const lines = text.split('\n').length - (text.endsWith('\n') ? 1 : 0);
  if (lines > LIMITS.fileLines) problems.push(`${file}: ${lines} lines, over ${LIMITS.fileLines}; split it along its seams`);
  const folder = file.slice(0, file.lastIndexOf('/'));
  perFolder.set(folder, (perFolder.get(folder) ?? 0) + 1);
}
for (const [folder, count] of perFolder)
  if (count > LIMITS.folderFiles) problems.push(`${folder}/: ${count} source files directly in it, over ${LIMITS.folderFiles}; give its stages folders of their own`);

// 4. Redis scripts in one place.
const SCRIPT_CALL = /\.(eval|evalsha|evalshaBuffer|evalBuffer)\s*\(|['"](?:EVAL|EVALSHA|SCRIPT)['"]|defineCommand\s*\(/;
for (const [file, text] of texts) {
  if (file.startsWith(`${SCRIPT_HOME}/`)) continue;
  const lines = text.split('\n');
  lines.forEach((line, i) => {
    if (SCRIPT_CALL.test(line)) problems.push(`${file}:${i + 1}: runs a Redis script outside ${SCRIPT_HOME}; define it there and call it through the script loader`);
  });
}

if (process.argv.includes('--graph')) {
  const edges = new Map();
  for (const [from, targets] of imports)
    for (const to of targets) {
      const key = `${placeOf(from).top} → ${placeOf(to).top}`;
      if (placeOf(from).top !== placeOf(to).top) edges.set(key, (edges.get(key) ?? 0) + 1);
    }
  for (const [edge, count] of [...edges].sort()) console.log(`${edge} (${count})`);
}

if (problems.length) {
  for (const p of problems) console.error(p);
  console.error(`check-structure: ${problems.length} problem(s) in ${files.length} files`);
  process.exit(1);
}
console.log(`check-structure: ${files.length} files, no circle, every import with the flow, sizes within bounds, Redis scripts only in ${SCRIPT_HOME}`);
