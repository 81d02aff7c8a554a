/**
 * The reload sequence (src/reload.ts) on a real file with a capturing logger: only the changed
 * reloadable paths are applied and written into the running config, every other changed key is
 * named once as needing a restart, an invalid or missing file applies nothing, a part that fails
 * leaves the others applied, and signals in one turn are one reload. The built CLI's signals
 * are test/integration/operations/config-reload.test.ts.
 */
import { rmSync, writeFileSync } from 'node:fs';
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { loadConfigText } from '../../../src/config/load.js';
import type { OutriggerConfig } from '../../../src/config/types.js';
import { createLogger } from '../../../src/observability/logger.js';
import { ConfigReloader, type Reloadable } from '../../../src/reload.js';
import { writeTempFile } from '../../support/clients/cli.js';

function yaml(o: { limit?: number; headers?: boolean; port?: number; origins?: string; level?: string } = {}): string {
  return [
    'service: { id: unit-reload }',
    'upstream: { url: "http://127.0.0.1:1" }',
    `listen: { port: ${o.port ?? 8080} }`,
    `log: { level: ${o.level ?? 'info'} }`,
    'limits:',
    `  headers: ${o.headers ?? true}`,
    `  policies: [{ name: p, by: service, limit: ${o.limit ?? 10}, window: 60s }]`,
    `cors: { allowOrigins: ${o.origins ?? 'echo'} }`,
  ].join('\n');
}

function setup(parts: (applied: string[]) => Reloadable[]) {
  const file = writeTempFile('outrigger.yaml', yaml());
  const current = loadConfigText(yaml(), file).config;
  const lines: Array<Record<string, any>> = [];
  const destination = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const line of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(line) as Record<string, any>);
      done();
    },
  });
  const applied: string[] = [];
  const reloader = new ConfigReloader(current, file, parts(applied), createLogger({ level: 'info', destination }));
  return { file, current, lines, applied, reloader, write: (text: string) => writeFileSync(file, text) };
}

const standard = (applied: string[]): Reloadable[] => [
  { path: 'limits.policies', apply: (next: OutriggerConfig) => applied.push(`limits.policies:${next.limits.policies[0]!.limit}`) },
  { path: 'cors', apply: () => applied.push('cors') },
];

describe('ConfigReloader', () => {
  it('applies only the changed reloadable path and writes it into the running config', () => {
    const t = setup(standard);
    const limitsBefore = t.current.limits;
    t.write(yaml({ limit: 20 }));
    expect(t.reloader.reload('SIGHUP')).toEqual({ kind: 'applied', applied: ['limits.policies'], needsRestart: [] });
    expect(t.applied).toEqual(['limits.policies:20']);
    // In place: whoever holds config.limits (the /_admin/limits area, the key overrides' check) sees the new list.
    expect(t.current.limits).toBe(limitsBefore);
    expect(t.current.limits.policies[0]!.limit).toBe(20);
    expect(t.lines.map((l) => l.msg)).toEqual(['config reload: applied limits.policies']);
  });

  it('names every other changed key once, as needing a restart, down to the key inside a section (a default derived from one too)', () => {
    const t = setup(standard);
    t.write(yaml({ headers: false, port: 9090, origins: 'none', level: 'debug' }));
    const outcome = t.reloader.reload('SIGHUP');
    // In the config's own key order, which the test does not fix.
    expect(outcome.kind === 'applied' && { applied: outcome.applied, needsRestart: [...outcome.needsRestart].sort() }).toEqual({
      applied: ['cors'],
      needsRestart: ['limits.headers', 'listen.port', 'log.level', 'service.publicUrl'],
    });
    expect(t.current.listen.port).toBe(8080);
    expect(t.current.limits.headers).toBe(true);
    expect(t.current.cors).toEqual({ allowOrigins: 'none' });
    expect(t.lines).toHaveLength(2);
    expect(t.lines[1]).toMatchObject({ level: 40, needsRestart: outcome.kind === 'applied' ? outcome.needsRestart : [] });
    expect(t.lines[1]!.msg).toBe(`config reload: ${(t.lines[1]!.needsRestart as string[]).join(', ')} changed; needs a restart, not applied (reloadable: limits.policies, cors)`);
  });

  it('applies nothing from an invalid file, with one line naming every problem', () => {
    const t = setup(standard);
    t.write(yaml({ limit: 0 }) + '\nlisten2: {}\n');
    const outcome = t.reloader.reload('SIGHUP');
    expect(outcome.kind).toBe('invalid');
    expect(t.applied).toEqual([]);
    expect(t.current.limits.policies[0]!.limit).toBe(10);
    expect(t.lines).toHaveLength(1);
    expect(t.lines[0]!.level).toBe(50);
    expect(t.lines[0]!.msg).toContain('limits.policies[0].limit: must be an integer from 1');
    expect(t.lines[0]!.msg).toContain('listen2: unknown option');
  });

  it('names a missing file and keeps the running config', () => {
    const t = setup(standard);
    rmSync(t.file);
    expect(t.reloader.reload('SIGHUP')).toMatchObject({ kind: 'invalid', problems: [`file not found: ${t.file}`] });
    expect(t.lines.map((l) => l.msg)).toEqual([`config reload refused, the running config is kept: file not found: ${t.file}`]);
  });

  it('says so when nothing changed', () => {
    const t = setup(standard);
    expect(t.reloader.reload('SIGHUP')).toEqual({ kind: 'unchanged' });
    expect(t.lines.map((l) => l.msg)).toEqual(['config reload: nothing changed']);
  });

  it('keeps a part that fails at its running value and applies the others', () => {
    const t = setup((applied) => [
      {
        path: 'limits.policies',
        apply: () => {
          throw new Error('boom');
        },
      },
      { path: 'cors', apply: () => applied.push('cors') },
    ]);
    t.write(yaml({ limit: 20, origins: 'none' }));
    expect(t.reloader.reload('SIGHUP')).toEqual({ kind: 'applied', applied: ['cors'], needsRestart: [] });
    expect(t.current.limits.policies[0]!.limit).toBe(10);
    expect(t.lines.map((l) => l.msg)).toEqual(['config reload: applying limits.policies failed; it keeps its running value', 'config reload: applied cors']);
  });

  it('takes a storm of signals in one turn as one reload', async () => {
    const t = setup(standard);
    t.write(yaml({ limit: 30 }));
    for (let i = 0; i < 100; i++) t.reloader.schedule('SIGHUP');
    await new Promise((resolve) => setImmediate(resolve));
    expect(t.applied).toEqual(['limits.policies:30']);
    expect(t.lines).toHaveLength(1);
  });
});
