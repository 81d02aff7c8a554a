import { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { registerPredicateCommand, runPredicateTest, type CommandIo } from '../../../src/cli/commands/predicate.js';

describe('runPredicateTest', () => {
  it('prints true and exits 0 when the condition matches', () => {
    expect(runPredicateTest("path-prefix('/api') and method(POST)", { method: 'POST', path: '/api/x' })).toEqual({ exitCode: 0, output: 'true' });
  });

  it('prints false and exits 1 when it does not', () => {
    expect(runPredicateTest("path-prefix('/api')", { path: '/other' })).toEqual({ exitCode: 1, output: 'false' });
  });

  it('defaults to GET /', () => {
    expect(runPredicateTest("method(GET) and path('/')").exitCode).toBe(0);
  });

  it('reads a query string from --path', () => {
    expect(runPredicateTest('qparams-contain(a, b) and equals(%{q,b}, 2)', { path: '/c?a=1&b=2' }).exitCode).toBe(0);
  });

  it('takes repeated headers with case-insensitive names', () => {
    const options = { header: ['X-Tenant: acme', 'accept:a', 'ACCEPT:b'] };
    expect(runPredicateTest("equals(%{i,x-tenant}, acme) and equals(%{i,Accept}, '[a, b]')", options).exitCode).toBe(0);
  });

  it('takes a response status', () => {
    expect(runPredicateTest('equals(%s, 404)', { status: '404' }).exitCode).toBe(0);
    expect(runPredicateTest('equals(%s, 404)', { status: 200 }).exitCode).toBe(1);
  });

  it('takes a user for @user variables and a JSON body for bson-request-*', () => {
    expect(runPredicateTest("path-template('/{u}') and equals(@user.id, ${u})", { path: '/bob', user: 'bob' }).exitCode).toBe(0);
    expect(runPredicateTest('in(value=admin, array=@user.roles)', { user: 'bob', role: ['user', 'admin'] }).exitCode).toBe(0);
    expect(runPredicateTest('bson-request-contains(a)', { method: 'POST', body: '{"a": 1}' }).exitCode).toBe(0);
  });

  it('prints the parse error with the expression and a caret under the position, exit 2', () => {
    const result = runPredicateTest("path('/a'))");
    expect(result.exitCode).toBe(2);
    const lines = result.output.split('\n');
    expect(lines[0]).toMatch(/^error: .*\(at position 10\)$/);
    expect(lines[1]).toBe("path('/a'))");
    expect(lines[2]).toBe('          ^');
  });

  it('points at the right line of a multi-line expression', () => {
    const result = runPredicateTest('method(GET)\n  and foo(1)');
    expect(result.output.split('\n').slice(1)).toEqual(['  and foo(1)', '      ^']);
  });

  it('refuses malformed options with exit 2', () => {
    expect(runPredicateTest('true', { header: ['no-colon'] })).toMatchObject({ exitCode: 2, output: expect.stringMatching(/--header/) });
    expect(runPredicateTest('true', { status: 'abc' })).toMatchObject({ exitCode: 2, output: expect.stringMatching(/--status/) });
    expect(runPredicateTest('true', { body: '{' })).toMatchObject({ exitCode: 2, output: expect.stringMatching(/--body/) });
  });
});

describe('outrigger predicate test (commander)', () => {
  class Exit extends Error {
    constructor(readonly code: number) {
      super(`exit ${code}`);
    }
  }

  function run(args: string[]): { stdout: string; stderr: string; code: number } {
    const out = { stdout: '', stderr: '', code: -1 };
    const io: CommandIo = {
      write: (stream, text) => void (out[stream] += text),
      setExitCode: (code) => void (out.code = code),
      exit: (code) => {
        throw new Exit(code);
      },
    };
    const program = new Command().exitOverride().configureOutput({ writeErr: (text) => void (out.stderr += text), writeOut: (text) => void (out.stdout += text) });
    registerPredicateCommand(program, io);
    try {
      program.parse(['predicate', 'test', ...args], { from: 'user' });
    } catch (error) {
      if (!(error instanceof Exit)) throw error;
      out.code = error.code;
    }
    return out;
  }

  it('parses the options and prints the result', () => {
    expect(run(["path-prefix('/api')", '--path', '/api/x?y=1', '--method', 'GET', '--header', 'A:1', '--header', 'B:2'])).toEqual({ stdout: 'true\n', stderr: '', code: 0 });
    expect(run(['equals(%s, 500)', '--status', '404'])).toMatchObject({ stdout: 'false\n', code: 1 });
  });

  it('prints parse errors to stderr with exit 2', () => {
    const result = run(['path(']);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/^error: /);
  });

  it('exits 2, not 1 (false), on a usage error', () => {
    const result = run(['true', '--no-such-option']);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/unknown option/);
  });
});

describe('runPredicateTest hints', () => {
  it('explains a false that comes from a response attribute evaluated without --status', () => {
    const result = runPredicateTest('equals(%s, 404)');
    expect(result).toMatchObject({ exitCode: 1, output: 'false' });
    expect(result.hint).toMatch(/no --status was given.*--status 200/);
    expect(runPredicateTest('equals(%s, 404)', { status: 200 }).hint).toBeUndefined();
    expect(runPredicateTest("path('/x')").hint).toBeUndefined();
  });
});
