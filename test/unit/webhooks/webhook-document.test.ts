import net from 'node:net';
import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import type { StoredDocument } from '../../../src/store/document-store.js';
import type { HostLookup } from '../../../src/net/ssrf-guard/index.js';
import { emailAddressProblem, matchesWebhookSearch, validateWebhookDocument, withoutSecret, type WebhookValidationOptions } from '../../../src/webhooks/documents/index.js';
import { buildStandardWebhookHeaders } from '../../../src/webhooks/signature.js';

const ZONE: Record<string, string[]> = { 'hooks.example': ['93.184.216.34'], 'internal.test': ['10.0.0.7'], 'loop.test': ['127.0.0.1'] };
const lookup: HostLookup = async (h) => {
  const a = ZONE[h];
  if (!a) throw Object.assign(new Error('ENOTFOUND'), { code: 'ENOTFOUND' });
  return a.map((address) => ({ address, family: net.isIP(address) }));
};
const options: WebhookValidationOptions = {
  validateCondition: (text) => (text.includes('(') ? null : `Unexpected end of input at position ${text.length}`),
  lookup,
  now: 1_700_000_000_000,
};

const http = { name: 'Orders', type: 'http', condition: 'path-prefix(/orders)', url: 'https://hooks.example/in' };
const email = {
  name: 'Mail',
  type: 'email',
  condition: 'method(POST)',
  email: { to: ['ops@example.com'], subject: 'New {{request.path}}', bodyType: 'html', bodyTemplate: '<p>{{request.body.name}}</p>' },
};

async function problemsOf(input: unknown, opts: Partial<WebhookValidationOptions> = {}): Promise<string[]> {
  const r = await validateWebhookDocument(input, { ...options, ...opts });
  if (r.ok) throw new Error(`expected problems, got ${JSON.stringify(r.doc)}`);
  return r.problems;
}

describe('validateWebhookDocument: http', () => {
  it('accepts a minimal document and fills defaults', async () => {
    const r = await validateWebhookDocument({ _id: 'wh-1', ...http }, options);
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.doc).toMatchObject({
      _id: 'wh-1',
      name: 'Orders',
      type: 'http',
      condition: 'path-prefix(/orders)',
      enabled: true,
      url: 'https://hooks.example/in',
      timeout_ms: 5000,
      headers: {},
      createdAt: { $date: 1_700_000_000_000 },
      updatedAt: { $date: 1_700_000_000_000 },
    });
    expect(r.doc.type === 'http' && r.doc.secret).toMatch(/^whsec_/);
    expect('transform' in r.doc).toBe(false);
    const stored: StoredDocument = r.doc; // documents fit the shared document store
    expect(stored._id).toBe('wh-1');
    // The generated secret really signs.
    if (r.doc.type === 'http') {
      const headers = buildStandardWebhookHeaders({ secret: r.doc.secret, msgId: 'msg_1', body: '{}' });
      expect(new Webhook(r.doc.secret).verify('{}', { ...headers })).toEqual({});
    }
  });

  it('generates an _id when none is given, keeps the existing secret and createdAt on replace', async () => {
    const r = await validateWebhookDocument(http, {
      ...options,
      existing: { secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', createdAt: { $date: 5 } },
    });
    expect(r.ok).toBe(true);
    if (!r.ok || r.doc.type !== 'http') return;
    expect(r.doc._id).toMatch(/^[0-9a-f]{24}$/);
    expect(r.doc.secret).toBe('whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw');
    expect(r.doc.createdAt).toEqual({ $date: 5 });
    expect(r.doc.updatedAt).toEqual({ $date: 1_700_000_000_000 });
  });

  it('accepts every field with good values', async () => {
    const r = await validateWebhookDocument(
      {
        ...http,
        enabled: false,
        timeout_ms: 30000,
        headers: { 'X-Token': 'abc', 'Content-Type': 'application/json' },
        transform: { enabled: true, template: '{"path": "{{request.path}}"}' },
        secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
        createdAt: { $date: 1 },
        updatedAt: { $date: 2 },
      },
      options,
    );
    expect(r.ok).toBe(true);
    if (!r.ok || r.doc.type !== 'http') return;
    expect(r.doc.enabled).toBe(false);
    expect(r.doc.transform).toEqual({ enabled: true, template: '{"path": "{{request.path}}"}' });
    expect(r.doc.secret).toBe('whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw');
    expect(r.doc.createdAt).toEqual({ $date: 1_700_000_000_000 });
  });

  it('reports every problem at once, each naming its field', async () => {
    const problems = await problemsOf({
      _id: 'has/slash',
      name: '',
      type: 'http',
      condition: 'broken',
      enabled: 'yes',
      url: 'ftp://hooks.example/',
      timeout_ms: 500,
      headers: { 'Bad Name': 'x', 'X-Num': 5, 'Webhook-Signature': 'x', 'X-Crlf': 'a\r\nb' },
      transform: { enabled: 'sure', template: '{{#open}}', extra: 1 },
      secret: 'plain',
      email: {},
      colour: 'blue',
    });
    expect(problems).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^email is only allowed on email webhooks/),
        expect.stringMatching(/^colour is not a webhook field/),
        expect.stringMatching(/^_id must be a string of 1-128/),
        'name must be a non-empty string',
        'condition is invalid: Unexpected end of input at position 6',
        'enabled must be true or false',
        'timeout_ms must be an integer from 1000 to 30000 (milliseconds)',
        expect.stringMatching(/^headers\.Bad Name is not a valid header name/),
        'headers.X-Num must be a string (got a number)',
        'headers.Webhook-Signature cannot be set: Outrigger sets it itself',
        expect.stringMatching(/^headers\.X-Crlf: .*HTTP forbids/),
        'transform.extra is not a transform field (allowed: enabled, template)',
        'transform.enabled must be true or false',
        expect.stringMatching(/^transform\.template: template is not valid Mustache: Unclosed section "open"/),
        'secret must start with whsec_ (omit it to have one generated)',
        'url must use http or https (got "ftp")',
      ]),
    );
    expect(problems).toHaveLength(16);
  });

  it.each([
    [{ timeout_ms: 1000.5 }, 'timeout_ms must be an integer from 1000 to 30000 (milliseconds)'],
    [{ timeout_ms: 30001 }, 'timeout_ms must be an integer from 1000 to 30000 (milliseconds)'],
    [{ timeout_ms: '5000' }, 'timeout_ms must be an integer from 1000 to 30000 (milliseconds)'],
    [{ headers: ['x'] }, 'headers must be an object of header names to string values'],
    [{ headers: { host: 'x' } }, 'headers.host cannot be set: Outrigger sets it itself'],
    [{ headers: { 'X-A': '1', 'x-a': '2' } }, 'headers.x-a appears twice (header names are case-insensitive)'],
    [{ transform: 'yes' }, 'transform must be an object {enabled, template}'],
    [{ transform: { enabled: true } }, 'transform.template is required while transform.enabled is true'],
    [{ transform: { template: '  ' } }, 'transform.template must not be empty while transform.enabled is true'],
    [{ transform: { enabled: true, template: 'a {{> p}}' } }, 'transform.template: template uses a partial ({{> name}}); partials are not supported, write the content inline'],
    [{ transform: { enabled: true, template: 7 } }, 'transform.template must be a Mustache template string (got a number)'],
    [{ url: undefined }, 'url is required: an absolute http:// or https:// URL'],
  ])('%j → %s', async (patch, expected) => {
    const input: Record<string, unknown> = { ...http, ...patch };
    for (const [k, v] of Object.entries(input)) if (v === undefined) delete input[k];
    expect(await problemsOf(input)).toEqual([expected]);
  });

  it('keeps a disabled transform with a template, and refuses a broken template even when disabled', async () => {
    const r = await validateWebhookDocument({ ...http, transform: { enabled: false, template: '{"a": 1}' } }, options);
    expect(r.ok && r.doc.type === 'http' && r.doc.transform).toEqual({ enabled: false, template: '{"a": 1}' });
    const r2 = await validateWebhookDocument({ ...http, transform: { enabled: false } }, options);
    expect(r2.ok && r2.doc.type === 'http' && r2.doc.transform).toEqual({ enabled: false });
    expect((await problemsOf({ ...http, transform: { enabled: false, template: '{{#x}}' } }))[0]).toMatch(/^transform\.template: template is not valid Mustache/);
  });

  it('applies the SSRF rules to the url, with allowPrivateTargets', async () => {
    expect((await problemsOf({ ...http, url: 'http://internal.test/' }))[0]).toMatch(/^url: webhook target host "internal.test" resolves to 10.0.0.7 \(private, 10.0.0.0\/8\)/);
    expect((await problemsOf({ ...http, url: 'http://169.254.169.254/' }))[0]).toMatch(/^url: webhook target 169.254.169.254 \(link-local/);
    expect((await problemsOf({ ...http, url: 'http://nowhere.test/' }))[0]).toMatch(/could not be resolved/);
    const allowed = await validateWebhookDocument({ ...http, url: 'http://loop.test:8080/x' }, { ...options, allowPrivateTargets: ['127.0.0.0/8'] });
    expect(allowed.ok).toBe(true);
    const skipped = await validateWebhookDocument({ ...http, url: 'http://nowhere.test/' }, { ...options, skipUrlResolution: true });
    expect(skipped.ok).toBe(true);
  });
});

describe('validateWebhookDocument: email', () => {
  it('accepts a valid email webhook', async () => {
    const r = await validateWebhookDocument({ ...email, email: { ...email.email, cc: ['boss@example.org'] } }, options);
    expect(r.ok).toBe(true);
    if (!r.ok || r.doc.type !== 'email') return;
    expect(r.doc.email).toEqual({ ...email.email, cc: ['boss@example.org'] });
    expect(r.doc.enabled).toBe(true);
    expect('secret' in r.doc).toBe(false);
  });

  it('refuses http fields on an email webhook and checks the email block', async () => {
    const problems = await problemsOf({
      ...email,
      url: 'https://hooks.example/',
      timeout_ms: 5000,
      email: { to: [], cc: ['ok@example.com', 'not an address'], subject: '{{#s}}', bodyType: 'text', bodyTemplate: 3, bcc: ['x@y.z'] },
    });
    expect(problems).toEqual([
      'url is only allowed on http webhooks (this one has type "email")',
      'timeout_ms is only allowed on http webhooks (this one has type "email")',
      'email.bcc is not an email field (allowed: to, cc, subject, bodyType, bodyTemplate)',
      'email.to must be a non-empty array of e-mail addresses',
      'email.cc[1] "not an address" is not an e-mail address (write it like ops@example.com, without a display name)',
      expect.stringMatching(/^email\.subject: template is not valid Mustache: Unclosed section "s"/),
      'email.bodyType must be "json" or "html" (got "text")',
      'email.bodyTemplate must be a Mustache template string (got a number)',
    ]);
  });

  it('requires the email block and its fields', async () => {
    expect(await problemsOf({ name: 'm', type: 'email', condition: 'true()' })).toEqual(['email is required for an email webhook: {to, cc?, subject, bodyType, bodyTemplate}']);
    expect(await problemsOf({ ...email, email: {} })).toEqual([
      'email.to must be a non-empty array of e-mail addresses',
      'email.subject is required: a Mustache template for the subject line',
      'email.bodyType is required: "json" or "html"',
      'email.bodyTemplate is required: a Mustache template for the body',
    ]);
  });

  it('limits recipients and refuses duplicates', async () => {
    const many = Array.from({ length: 51 }, (_, i) => `u${i}@example.com`);
    expect(await problemsOf({ ...email, email: { ...email.email, to: many } })).toEqual(['email.to and email.cc together may name at most 50 recipients']);
    expect(await problemsOf({ ...email, email: { ...email.email, to: ['a@example.com', 'A@example.com'] } })).toEqual(['email.to[1] repeats A@example.com']);
  });
});

describe('validateWebhookDocument: common', () => {
  it('refuses non-objects and missing required fields', async () => {
    expect(await problemsOf([])).toEqual(['must be a JSON object (got an array)']);
    expect(await problemsOf({})).toEqual([
      'type is required: "http" or "email"',
      'name is required: a non-empty string',
      'condition is required: a condition such as method(POST) and path-prefix(/orders)',
    ]);
    expect(await problemsOf({ ...http, type: 'sms' })).toEqual(['type must be "http" or "email" (got "sms")']);
  });
});

describe('helpers', () => {
  it('emailAddressProblem', () => {
    for (const ok of ['a@example.com', 'first.last+tag@sub.example.co.uk', "o'brien@example.ie"]) expect(emailAddressProblem(ok)).toBeNull();
    for (const bad of ['a@b', 'a@@b.c', '.a@b.co', 'a..b@c.co', 'Bob <bob@example.com>', 'a@-b.co', 'a b@c.co', 'a@b.co\r\nBcc: x@y.z', 5]) {
      expect(emailAddressProblem(bad)).not.toBeNull();
    }
  });

  it('withoutSecret and matchesWebhookSearch', async () => {
    const r = await validateWebhookDocument(http, options);
    if (!r.ok) throw new Error('invalid');
    expect('secret' in withoutSecret(r.doc as { secret?: string })).toBe(false);
    expect(matchesWebhookSearch(r.doc, 'ORDERS')).toBe(true);
    expect(matchesWebhookSearch(r.doc, 'hooks.example')).toBe(true);
    expect(matchesWebhookSearch(r.doc, 'path-prefix')).toBe(true);
    expect(matchesWebhookSearch(r.doc, 'nothing')).toBe(false);
  });
});
