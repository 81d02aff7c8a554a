import { describe, expect, it } from 'vitest';
import { validateConfig } from '../../../src/config/validate.js';

const base = { service: { id: 'cors-config' }, upstream: { url: 'http://127.0.0.1:1' } };

describe('cors.allowOrigins (SPEC §15)', () => {
  it("defaults to RESTHeart's behaviour, the Origin echoed", () => {
    const { config, problems } = validateConfig(base);
    expect(problems).toEqual([]);
    expect(config.cors).toEqual({ allowOrigins: 'echo' });
  });

  it('takes echo, none, or a list of origins (null included)', () => {
    expect(validateConfig({ ...base, cors: { allowOrigins: 'echo' } }).config.cors.allowOrigins).toBe('echo');
    expect(validateConfig({ ...base, cors: { allowOrigins: 'none' } }).config.cors.allowOrigins).toBe('none');
    const listed = validateConfig({ ...base, cors: { allowOrigins: ['https://app.example.com', 'http://localhost:5173', 'null'] } });
    expect(listed.problems).toEqual([]);
    expect(listed.config.cors.allowOrigins).toEqual(['https://app.example.com', 'http://localhost:5173', 'null']);
  });

  it('names the path of each bad value', () => {
    expect(validateConfig({ ...base, cors: { allowOrigins: 'everyone' } }).problems).toEqual([
      'cors.allowOrigins: must be echo, none or a list of origins like [https://app.example.com] (got "everyone")',
    ]);
    expect(validateConfig({ ...base, cors: { allowOrigins: ['*', 'https://app.example.com/', 'ftp://x.example', 'https://App.example.com', 7, 'app.example.com'] } }).problems).toEqual([
      'cors.allowOrigins[0]: must be an origin like https://app.example.com; "*" is not accepted (use `echo` to answer every origin, without credentials)',
      'cors.allowOrigins[1]: must be written as the browser sends it, "https://app.example.com" (scheme, lowercase host, port only when not the default, no path or trailing /; got "https://app.example.com/")',
      'cors.allowOrigins[2]: must be an http:// or https:// origin (got "ftp://x.example")',
      'cors.allowOrigins[3]: must be written as the browser sends it, "https://app.example.com" (scheme, lowercase host, port only when not the default, no path or trailing /; got "https://App.example.com")',
      'cors.allowOrigins[4]: must be an origin string (got 7)',
      'cors.allowOrigins[5]: must be an origin like https://app.example.com (got "app.example.com")',
    ]);
    expect(validateConfig({ ...base, cors: { allowOrigins: [] } }).problems).toEqual(['cors.allowOrigins: an empty list admits no origin; write none to turn CORS off']);
    expect(validateConfig({ ...base, cors: { allowOrigin: 'none' } }).problems[0]).toMatch(/^cors\.allowOrigin: unknown option.*allowOrigins/);
  });
});
