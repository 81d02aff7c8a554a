import { describe, expect, it } from 'vitest';
import { parsePasswordHash, verifyPassword } from '../../../src/access/password-hash.js';
import { runCli, writeTempFile } from '../../support/clients/cli.js';

describe('outrigger check', () => {
  it('reports every mistake of a config at once as path: problem, exit 1', async () => {
    const file = writeTempFile(
      'bad.yaml',
      [
        'service: { id: "bad id!" }',
        'listen: { port: 99999 }',
        'upstream: { timeoutMs: fast, identity: { mode: jwt } }',
        'acl: { mode: strict }',
        'apiKeys: { maxExpiresInDays: 5000 }',
        'upstreem: { url: http://x }',
        'redis: { url: "${OUTRIGGER_TEST_UNSET_VAR}" }',
      ].join('\n'),
    );
    const { code, stderr } = await runCli(['check', '-c', file], { env: { OUTRIGGER_TEST_UNSET_VAR: '' } });
    expect(code).toBe(1);
    const lines = stderr.trim().split('\n');
    expect(lines[0]).toMatch(/problems found/);
    for (const expected of [
      /^service\.id: must be 1-64 letters/m,
      /^listen\.port: must be an integer from 0 to 65535/m,
      /^upstream\.url: is required/m,
      /^upstream\.timeoutMs: must be an integer/m,
      /^upstream\.identity\.jwt\.secret: is required when upstream\.identity\.mode is jwt/m,
      /^acl\.mode: must be one of enforce, own-routes/m,
      /^apiKeys\.maxExpiresInDays: must be an integer from 1 to 3650/m,
      /^upstreem: unknown option/m,
      /^redis\.url: environment variable OUTRIGGER_TEST_UNSET_VAR is not set/m,
    ])
      expect(stderr).toMatch(expected);
  });

  it('accepts a good config, interpolating ${VAR} and ${VAR:-default}', async () => {
    const file = writeTempFile(
      'good.yaml',
      'service: { id: demo }\nupstream:\n  url: ${OUTRIGGER_TEST_UPSTREAM}\n  identity: { mode: jwt, jwt: { secret: "${OUTRIGGER_TEST_SECRET:-a-default-secret-that-is-long-enough-1234}" } }\n',
    );
    const { code, stdout, stderr } = await runCli(['check', '-c', file], { env: { OUTRIGGER_TEST_UPSTREAM: 'http://127.0.0.1:9' } });
    expect(stderr).toBe('');
    expect(code).toBe(0);
    expect(stdout).toMatch(/OK/);
  });

  it('accepts the shipped example config and its setup file, so the docs stay true', async () => {
    const example = new URL('../../../config/outrigger.example.yaml', import.meta.url).pathname;
    const { code, stdout, stderr } = await runCli(['check', '-c', example], { env: { UPSTREAM_JWT_SECRET: 'x'.repeat(40) } });
    expect(stderr).toBe('');
    expect(code).toBe(0);
    expect(stdout).toMatch(/OK \(bootstrap .*setup\.yaml: OK\)/);
  });

  it('reports YAML syntax errors with their line', async () => {
    const file = writeTempFile('syntax.yaml', 'service:\n  id: demo\n  bad: [unclosed\n');
    const { code, stderr } = await runCli(['check', '-c', file]);
    expect(code).toBe(1);
    expect(stderr).toMatch(/syntax\.yaml:\d+:\d+:/);
  });
});

describe('outrigger hash-password', () => {
  it('prints an scrypt hash of stdin without its trailing newline', async () => {
    const { code, stdout } = await runCli(['hash-password'], { stdin: 'correct horse\n' });
    expect(code).toBe(0);
    const hash = parsePasswordHash(stdout.trim());
    expect(hash).not.toBeNull();
    expect(await verifyPassword('correct horse', hash!)).toBe(true);
    expect(await verifyPassword('correct horse\n', hash!)).toBe(false);
  });
});
