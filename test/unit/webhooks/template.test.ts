import Mustache from 'mustache';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { buildTemplateView, jsonSyntaxProblem, renderTemplate, templateModeForHttp, templateSyntaxProblem, type TemplateRenderResult } from '../../../src/webhooks/template/index.js';
import { sampleEvent } from './fixtures.js';

const view = buildTemplateView(sampleEvent(), { id: 'wh1', name: 'Orders' });

function ok(result: TemplateRenderResult): string {
  if (!result.ok) throw new Error(`expected success, got ${result.code}: ${result.error}`);
  return result.output;
}

function failure(result: TemplateRenderResult) {
  if (result.ok) throw new Error(`expected a failure, got ${result.output}`);
  return result;
}

describe('template view', () => {
  it('exposes the documented variables', () => {
    const out = ok(
      renderTemplate(
        '{{service.id}}|{{timestamp}}|{{request.method}}|{{request.path}}|{{request.query.dryRun}}|{{response.statusCode}}|{{webhook.name}}|{{id}}|{{response.body.status}}',
        view,
        'text',
      ),
    );
    expect(out).toBe('demo|2024-01-02T03:04:05.678Z|POST|/shop/orders|false|201|Orders|1700000000000-0|created');
  });

  it('resolves headers in any case', () => {
    const t = '{{request.headers.Content-Type}}|{{request.headers.content-type}}|{{request.headers.CONTENT-TYPE}}|{{response.headers.Location}}|{{request.headers.X-Request-Id}}';
    expect(ok(renderTemplate(t, view, 'text'))).toBe('application/json|application/json|application/json|/shop/orders/99|req-1');
  });

  it('joins repeated header values', () => {
    expect(ok(renderTemplate('{{response.headers.Set-Cookie}}', view, 'text'))).toBe('a=1, b=2');
  });

  it('follows dot paths, array indexes, sections and inverted sections', () => {
    const t =
      '{{request.body.customer.email}} {{request.body.items.1.sku}} {{#request.body.items}}[{{sku}}x{{qty}}]{{/request.body.items}}{{^request.body.paid}} unpaid{{/request.body.paid}}{{^request.body.missing}} none{{/request.body.missing}}';
    expect(ok(renderTemplate(t, view, 'text'))).toBe('bob@example.com B-2 [A-1x2][B-2x1] unpaid none');
  });

  it('uses the spec rule for dotted names: the first segment decides the context', () => {
    const v = { a: { b: {} }, b: { c: 'ERROR' } };
    expect(ok(renderTemplate('{{#a}}{{b.c}}{{/a}}', v, 'text'))).toBe('');
  });

  it('iterates over scalars with {{.}}', () => {
    expect(ok(renderTemplate('{{#request.query.tag}}<{{.}}>{{/request.query.tag}}', view, 'text'))).toBe('<a><b>');
  });
});

describe('json mode', () => {
  it('{{x}} escapes for a JSON string and never HTML-escapes; the data survives the round trip', () => {
    const out = ok(renderTemplate('{"name": "{{request.body.customer.name}}", "note": "{{request.body.note}}"}', view, 'json'));
    expect(JSON.parse(out)).toEqual({ name: 'O\'Brien "Bob"', note: 'line1\nline2\t<b>&</b> C:\\temp https://x.example/a?b=1&c=2' });
    expect(out).not.toContain('&quot;');
    expect(out).not.toContain('&#x2F;');
  });

  it('{{{x}}} inserts raw values: numbers, booleans, null, objects and arrays as JSON', () => {
    const out = ok(
      renderTemplate(
        '{"total": {{{request.body.total}}}, "paid": {{{request.body.paid}}}, "nothing": {{{request.body.nothing}}}, "items": {{{request.body.items}}}, "body": {{{request.body}}}, "q": {{{request.query}}}, "h": {{{request.headers}}} }',
        view,
        'json',
      ),
    );
    const parsed = JSON.parse(out);
    expect(parsed.total).toBe(42.5);
    expect(parsed.paid).toBe(false);
    expect(parsed.nothing).toBeNull();
    expect(parsed.items).toEqual([
      { sku: 'A-1', qty: 2 },
      { sku: 'B-2', qty: 1 },
    ]);
    expect(parsed.body).toEqual(sampleEvent().request.body);
    expect(parsed.q).toEqual({ dryRun: 'false', tag: ['a', 'b'] });
    expect(parsed.h['content-type']).toBe('application/json');
  });

  it('{{x}} of an object embeds its JSON text as a string', () => {
    const out = ok(renderTemplate('{"items": "{{request.body.items}}", "n": "{{request.body.total}}"}', view, 'json'));
    const parsed = JSON.parse(out);
    expect(JSON.parse(parsed.items)).toEqual(sampleEvent().request.body && (sampleEvent().request.body as { items: unknown }).items);
    expect(parsed.n).toBe('42.5');
  });

  it('a raw string can inject, so the output is checked: invalid JSON fails with the reason, position and a snippet', () => {
    const r = failure(renderTemplate('{"name": "{{{request.body.customer.name}}}"}', view, 'json'));
    expect(r.code).toBe('TEMPLATE_OUTPUT_INVALID_JSON');
    expect(r.error).toMatch(/^rendered output is not valid JSON: expected "," or "}", found "B" at line 1, column 20, near: /);
    expect(r.error).toContain('⟪HERE⟫');
  });

  it('a missing value in a raw slot is reported as such', () => {
    const r = failure(renderTemplate('{\n  "m": {{{request.body.missing}}}\n}', view, 'json'));
    expect(r.error).toMatch(/expected a value, found a line break|expected a value, found "}"/);
    expect(r.error).toMatch(/line 2|line 3/);
  });

  it('names raw line breaks inside strings, trailing commas, unclosed containers and trailing text', () => {
    expect(failure(renderTemplate('{"n": "{{{request.body.note}}}"}', view, 'json')).error).toMatch(/a line break inside a string must be escaped \(use \{\{x\}\}/);
    expect(failure(renderTemplate('{"a": 1,}', view, 'json')).error).toMatch(/trailing comma before "}"/);
    expect(failure(renderTemplate('[1, 2,]', view, 'json')).error).toMatch(/trailing comma before "]"/);
    expect(failure(renderTemplate('{"a": [1, 2}', view, 'json')).error).toMatch(/expected "," or "]", found "}"/);
    expect(failure(renderTemplate('{"a": 1', view, 'json')).error).toMatch(/an object is not closed/);
    expect(failure(renderTemplate('{"a": 1} x', view, 'json')).error).toMatch(/unexpected "x" after the end of the JSON value/);
    expect(failure(renderTemplate('', view, 'json')).error).toMatch(/is the template empty/);
    expect(failure(renderTemplate('{"a": hello}', view, 'json')).error).toMatch(/text outside quotes/);
  });

  it('accepts any valid JSON, including deep nesting', () => {
    const deep = '['.repeat(5000) + ']'.repeat(5000);
    expect(ok(renderTemplate(deep, view, 'json'))).toBe(deep);
    expect(jsonSyntaxProblem('{"a":[1,-2.5e3,true,false,null,"\\u00e9\\n"]}')).toBeNull();
    expect(jsonSyntaxProblem('{"a":"\\x"}')).toMatch(/invalid escape/);
  });

  it('delimiter changes work (a way around "{{{" right after a JSON "{")', () => {
    const out = ok(renderTemplate('{{=<% %>=}}{"x":{"n":<%&request.body.total%>}}', view, 'json'));
    expect(JSON.parse(out)).toEqual({ x: { n: 42.5 } });
  });
});

describe('html and text modes', () => {
  it('html: {{x}} HTML-escapes, {{{x}}} does not', () => {
    const out = ok(renderTemplate('<p>{{request.body.note}}</p><p>{{{request.body.customer.name}}}</p>', view, 'html'));
    expect(out).toBe('<p>line1\nline2\t&lt;b&gt;&amp;&lt;&#x2F;b&gt; C:\\temp https:&#x2F;&#x2F;x.example&#x2F;a?b&#x3D;1&amp;c&#x3D;2</p><p>O\'Brien "Bob"</p>');
  });

  it('text: no escaping, line breaks removed', () => {
    const out = ok(renderTemplate('Order {{request.body.customer.name}}:\n  {{request.body.note}}\r\n', view, 'text'));
    expect(out).toBe('Order O\'Brien "Bob": line1 line2\t<b>&</b> C:\\temp https://x.example/a?b=1&c=2');
    expect(out).not.toMatch(/[\r\n]/);
  });

  it('plain: no escaping, nothing removed', () => {
    expect(ok(renderTemplate('a={{request.body.note}}', view, 'plain'))).toBe(`a=${(sampleEvent().request.body as { note: string }).note}`);
  });

  it('chooses plain for a non-JSON Content-Type of an HTTP webhook', () => {
    expect(templateModeForHttp(undefined)).toBe('json');
    expect(templateModeForHttp({ 'Content-Type': 'application/cloudevents+json; charset=utf-8' })).toBe('json');
    expect(templateModeForHttp({ 'content-type': 'text/plain' })).toBe('plain');
    expect(templateModeForHttp({ 'x-other': 'y' })).toBe('json');
  });
});

describe('isolation', () => {
  const originalEscape = Mustache.escape;
  afterEach(() => {
    Mustache.escape = originalEscape;
  });

  it('does not change Mustache globals, and is not affected by them', () => {
    ok(renderTemplate('{"a": "{{request.body.note}}"}', view, 'json'));
    expect(Mustache.escape).toBe(originalEscape);
    expect(Mustache.render('{{x}}', { x: '<"/>' })).toBe('&lt;&quot;&#x2F;&gt;');
    Mustache.escape = () => 'HACKED';
    Mustache.tags = ['<%', '%>'];
    try {
      expect(ok(renderTemplate('{{request.method}} {{request.body.customer.name}}', view, 'html'))).toBe('POST O&#39;Brien &quot;Bob&quot;');
    } finally {
      Mustache.tags = ['{{', '}}'];
    }
  });

  it('interleaved renders in different modes keep their own escaping', async () => {
    const t = '{"v": "{{request.body.customer.name}}"}';
    const results = await Promise.all(Array.from({ length: 50 }, (_, i) => Promise.resolve().then(() => renderTemplate(t, view, i % 2 === 0 ? 'json' : 'html'))));
    results.forEach((r, i) => {
      expect(ok(r)).toBe(i % 2 === 0 ? '{"v": "O\'Brien \\"Bob\\""}' : '{"v": "O&#39;Brien &quot;Bob&quot;"}');
    });
  });

  it('caches parsed templates', () => {
    const spy = vi.spyOn(Mustache.Writer.prototype, 'parse');
    const t = `{{request.method}} cache-test ${Math.random()}`;
    for (let i = 0; i < 5; i++) ok(renderTemplate(t, view, 'text'));
    expect(spy).toHaveBeenCalledTimes(1);
    spy.mockRestore();
  });
});

describe('abuse guards', () => {
  it('refuses partials at write time and at render time', () => {
    expect(templateSyntaxProblem('a {{> secrets}} b')).toMatch(/partials are not supported/);
    expect(templateSyntaxProblem('{{#request}}{{> p}}{{/request}}')).toMatch(/partials are not supported/);
    expect(failure(renderTemplate('{{> x}}', view, 'text')).code).toBe('TEMPLATE_PARTIALS_UNSUPPORTED');
  });

  it('reports syntax errors with line and column', () => {
    expect(templateSyntaxProblem('ok {{request.method}}')).toBeNull();
    expect(templateSyntaxProblem('line one\n{{#items}} no end')).toMatch(/^template is not valid Mustache: Unclosed section "items" at \d+ \(line 2, column \d+\)/);
    expect(templateSyntaxProblem('{{a')).toMatch(/Unclosed tag/);
    const r = failure(renderTemplate('{{#a}}', view, 'json'));
    expect(r.code).toBe('TEMPLATE_SYNTAX');
  });

  it('bounds the output size', () => {
    const big = { items: Array.from({ length: 2000 }, (_, i) => i), blob: 'x'.repeat(1000) };
    const r = failure(renderTemplate('{{#items}}{{blob}}{{/items}}', big, 'text'));
    expect(r.code).toBe('TEMPLATE_OUTPUT_TOO_LARGE');
    expect(r.error).toMatch(/exceeds 1048576 bytes/);
    expect(failure(renderTemplate('{{blob}}{{blob}}', big, 'text', { maxOutputBytes: 1500 })).code).toBe('TEMPLATE_OUTPUT_TOO_LARGE');
    // Multi-byte characters count in bytes.
    expect(failure(renderTemplate('{{s}}', { s: 'é'.repeat(800) }, 'text', { maxOutputBytes: 1000 })).code).toBe('TEMPLATE_OUTPUT_TOO_LARGE');
  });

  it('bounds the work of sections nested over large lists, even with no output', () => {
    const v = { a: Array.from({ length: 1000 }, () => 1) };
    const r = failure(renderTemplate('{{#a}}{{#a}}{{#a}}{{/a}}{{/a}}{{/a}}', v, 'text'));
    expect(r.code).toBe('TEMPLATE_TOO_COMPLEX');
  });

  it('prototype members and functions resolve to nothing', () => {
    const t =
      '[{{constructor}}][{{__proto__}}][{{request.constructor.name}}][{{request.body.items.constructor}}][{{request.method.constructor}}]' +
      '[{{#constructor}}x{{/constructor}}][{{request.body.toString}}][{{request.body.hasOwnProperty}}][{{request.body.items.map}}][{{request.headers.constructor}}]' +
      '[{{#request.body.items}}{{constructor.name}}{{/request.body.items}}][{{request.path.length}}]';
    expect(ok(renderTemplate(t, view, 'text'))).toBe('[][][][][][][][][][][][12]');
    const withFunction = { f: () => 'called', o: { g: () => 'called' } };
    expect(ok(renderTemplate('[{{f}}][{{o.g}}][{{#f}}x{{/f}}]', withFunction, 'text'))).toBe('[][][]');
  });

  it('an own "__proto__" key from JSON is not followed', () => {
    const body = JSON.parse('{"__proto__": {"polluted": "yes"}, "ok": 1}');
    const v = buildTemplateView(sampleEvent({ request: { ...sampleEvent().request, body } }));
    expect(ok(renderTemplate('{{request.body.__proto__.polluted}}{{request.body.ok}}', v, 'text'))).toBe('1');
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});

describe('deep nesting', () => {
  it('fails as too complex instead of crashing, at write time and at render time', () => {
    const deep = '{{#a}}'.repeat(20000) + '{{/a}}'.repeat(20000);
    // At write: refused by the nesting bound (docs/decisions.md: sections nest at most 32 levels).
    expect(templateSyntaxProblem(deep)).toBe('the template nests sections ({{#…}} / {{^…}}) 20000 levels deep; at most 32 are allowed');
    // At render (a template stored before the bound): a failure value, not a thrown RangeError.
    expect(renderTemplate(deep, { a: { a: true } }, 'text')).toEqual({ ok: false, code: 'TEMPLATE_TOO_COMPLEX', error: 'template nests sections too deeply; simplify it' });
  });
});

describe('template nesting bound (issue 11)', () => {
  it('refuses at write a template whose sections nest past MAX_TEMPLATE_NESTING, and accepts one at the bound', async () => {
    const { MAX_TEMPLATE_NESTING, templateSyntaxProblem: problem } = await import('../../../src/webhooks/template/index.js');
    const nested = (n: number) => '{{#request.body}}'.repeat(n) + 'x' + '{{/request.body}}'.repeat(n);
    expect(problem(nested(MAX_TEMPLATE_NESTING))).toBeNull();
    expect(problem(nested(MAX_TEMPLATE_NESTING + 1))).toMatch(new RegExp(`nests sections .* ${MAX_TEMPLATE_NESTING + 1} levels deep; at most ${MAX_TEMPLATE_NESTING}`));
  });
});
