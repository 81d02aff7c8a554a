/**
 * GraphiQL for an app: a browser opening `GET /graphql/<uri>` (Accept prefers text/html, no
 * `query` parameter) gets a page that loads the bundled GraphiQL (dist/assets/graphiql, built by
 * scripts/build-assets.mjs from graphiql-page.mjs) from the same URL with `?graphiql-asset=<file>`.
 * Page and assets are public code, served after the app lookup but before the ACL (SPEC §15: a
 * browser holding only an API key must be able to open it; the key goes in a field of the page).
 * The app's example operation is in the page only for a caller the ACL allows; others fetch it
 * with their key from `?graphiql-example`, behind the ACL. `?graphiql-sign-in` is the way in for
 * Basic users: the 401 makes the browser ask, and once allowed it sends them back to the page.
 * Everything carries the strict CSP: the page holds no script of its own and names its endpoint
 * (and example) in data attributes.
 */
import { existsSync } from 'node:fs';
import type { ServerResponse } from 'node:http';
import { fileURLToPath } from 'node:url';
import { STRICT_CSP, StaticAssets } from '../../http/static-assets.js';

const ASSET_PARAM = 'graphiql-asset';
const EXAMPLE_PARAM = 'graphiql-example';
const SIGN_IN_PARAM = 'graphiql-sign-in';
const SCRIPT = 'graphiql-page.js';
const STYLE = 'graphiql-page.css';
/** GraphiQL's fonts, taken out of its CSS at build time (scripts/extract-data-fonts.mjs). */
const FONT = /^font-\d+\.woff2?$/;

/** dist/assets/graphiql from the compiled module (dist/src/graphql/ui) or from the sources (src/graphql/ui). */
function assetsDirectory(): string {
  const candidates = ['../../../assets/graphiql', '../../../dist/assets/graphiql'].map((p) => fileURLToPath(new URL(p, import.meta.url)));
  return candidates.find((d) => existsSync(d)) ?? (candidates[0] as string);
}

let shared: StaticAssets | undefined;
function assets(): StaticAssets {
  return (shared ??= new StaticAssets(assetsDirectory()));
}

/** True when the request is a browser asking for a page rather than a GraphQL answer. */
export function wantsGraphiql(method: string, accept: string | undefined, query: URLSearchParams): boolean {
  if (method !== 'GET') return false;
  if (query.has(ASSET_PARAM)) return true;
  if (query.has('query') || query.has('extensions') || query.has(EXAMPLE_PARAM) || query.has(SIGN_IN_PARAM) || accept === undefined) return false;
  const types = accept.split(',').map((part) => part.split(';')[0]?.trim().toLowerCase());
  const html = types.indexOf('text/html');
  const json = types.findIndex((t) => t === 'application/json' || t === 'application/graphql-response+json');
  return html >= 0 && (json < 0 || html < json);
}

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** The operation the page opens on (the app's, compile/example-operation.ts). */
export interface GraphiqlExample {
  readonly query: string;
  readonly variables?: Readonly<Record<string, unknown>>;
  readonly operationName?: string;
}

/** True for an asset request: public, and never asking for the ACL's verdict. */
export const isGraphiqlAsset = (query: URLSearchParams): boolean => query.has(ASSET_PARAM);

/** `example` or `sign-in` for a GET asking for them (after the ACL), else undefined. */
export function graphiqlAside(method: string, query: URLSearchParams): 'example' | 'sign-in' | undefined {
  if (method !== 'GET') return undefined;
  return query.has(EXAMPLE_PARAM) ? 'example' : query.has(SIGN_IN_PARAM) ? 'sign-in' : undefined;
}

/** The app's example as JSON (the page asks for it with the key typed in). */
export function sendGraphiqlExample(res: ServerResponse, example: GraphiqlExample): void {
  const body = JSON.stringify(example);
  res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body), 'cache-control': 'no-store', 'x-content-type-options': 'nosniff' });
  res.end(body);
}

/** Back to the page once the browser's Basic credentials passed the ACL. */
export function redirectToGraphiql(res: ServerResponse, endpoint: string): void {
  res.writeHead(303, { location: endpoint, 'content-length': 0, 'cache-control': 'no-store' });
  res.end();
}

/**
 * Writes the page or the asset asked for; false when the asset does not exist (the caller answers
 * 404). `example` is given only when the ACL allowed the page's request.
 */
export function serveGraphiql(res: ServerResponse, endpoint: string, query: URLSearchParams, ifNoneMatch: string | undefined, example?: GraphiqlExample): boolean {
  const asset = query.get(ASSET_PARAM);
  if (asset !== null) return (asset === SCRIPT || asset === STYLE || FONT.test(asset)) && assets().send(res, asset, ifNoneMatch);
  if (!assets().has(SCRIPT)) return false;
  const e = escapeHtml(endpoint);
  const data = example === undefined ? '' : ` data-example="${escapeHtml(JSON.stringify(example))}"`;
  const html =
    '<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">' +
    `<title>GraphiQL ${e}</title><link rel="icon" href="data:,"><link rel="stylesheet" href="${e}?${ASSET_PARAM}=${STYLE}">` +
    `<script type="module" src="${e}?${ASSET_PARAM}=${SCRIPT}"></script></head>` +
    `<body><div id="graphiql" data-endpoint="${e}"${data}></div></body></html>`;
  res.writeHead(200, {
    'content-type': 'text/html; charset=utf-8',
    'content-length': Buffer.byteLength(html),
    'cache-control': 'no-store',
    'content-security-policy': STRICT_CSP,
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'no-referrer',
  });
  res.end(html);
  return true;
}
