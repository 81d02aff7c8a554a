/**
 * The operator's side of issue 48 through the built binary: `outrigger config schema` prints the
 * committed JSON Schema, and the demo's config file, the one the README names, passes `check`
 * (and a typo in a copy of it is named with its path).
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { requireBuiltCli, runCli, writeTempFile } from '../../support/clients/cli.js';

const root = resolve(import.meta.dirname, '../../..');
const demoConfig = resolve(root, 'examples/demo/outrigger.yaml');

describe('outrigger config schema (built)', () => {
  beforeAll(() => requireBuiltCli('these rows run the built outrigger'));

  it('prints the JSON Schema docs/outrigger.schema.json holds, draft 2020-12, exit 0', async () => {
    const { code, stdout, stderr } = await runCli(['config', 'schema']);
    expect(stderr).toBe('');
    expect(code).toBe(0);
    expect(stdout).toBe(readFileSync(resolve(root, 'docs/outrigger.schema.json'), 'utf8'));
    const schema = JSON.parse(stdout) as { $schema: string; additionalProperties: boolean; properties: Record<string, unknown> };
    expect(schema.$schema).toBe('https://json-schema.org/draft/2020-12/schema');
    expect(schema.additionalProperties).toBe(false);
    expect(Object.keys(schema.properties)).toContain('redis');
  });
});

describe('the demo config the README names (built)', () => {
  beforeAll(() => requireBuiltCli('these rows run the built outrigger'));

  it('is named by the README, and `check -c` on it passes with its bootstrap file', async () => {
    expect(readFileSync(resolve(root, 'README.md'), 'utf8')).toContain('check -c examples/demo/outrigger.yaml');
    const { code, stdout, stderr } = await runCli(['check', '-c', demoConfig], { env: { OUTRIGGER_DEMO_JWT_SECRET: '' } });
    expect(stderr).toBe('');
    expect(code).toBe(0);
    expect(stdout).toMatch(/outrigger\.yaml: OK \(bootstrap .*setup\.yaml: OK\)/);
  });

  it('a typo in a copy of it is refused with its path and the key it was meant to be', async () => {
    const text = readFileSync(demoConfig, 'utf8').replace('bootstrap: setup.yaml', `bootstrap: ${resolve(root, 'examples/demo/setup.yaml')}`);
    const file = writeTempFile('outrigger.yaml', text.replace('  server: outrigger', '  sever: outrigger'));
    const { code, stderr } = await runCli(['check', '-c', file]);
    expect(code).toBe(1);
    expect(stderr).toMatch(/^mcp\.sever: unknown option \(did you mean "server"\?\)$/m);
  });
});
