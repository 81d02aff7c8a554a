/**
 * GraphiQL for an app: a browser opening `GET /graphql/<uri>` (Accept prefers text/html, no
 * `query` parameter) gets a page that loads the bundled GraphiQL (dist/assets/graphiql, built by
 * scripts/build-assets.mjs from graphiql-page.mjs) from the same URL with `?graphiql-asset=<file>`.
 * Page and assets are served after the app lookup and the ACL, like every request to the app, and
 * carry the strict CSP: the page holds no script of its own and names its endpoint in a data
 * attribute.
 */
import { existsSync } from 'node:fs';
import type { ServerResponse } from 'node:http';
import { fileURLToPath } from 'node:url';
import { STRICT_CSP, StaticAssets } from '../../http/static-assets.js';

const ASSET_PARAM = 'graphiql-asset';
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
  if (query.has('query') || accept === undefined) return false;
  const types = accept.split(',').map((part) => part.split(';')[0]?.trim().toLowerCase());
  const html = types.indexOf('text/html');
  const json = types.findIndex((t) => t === 'application/json' || t === 'application/graphql-response+json');
  return html >= 0 && (json < 0 || html < json);
}

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** Writes the page or the asset asked for; false when the asset does not exist (the caller answers 404). */
export function serveGraphiql(res: ServerResponse, endpoint: string, query: URLSearchParams, ifNoneMatch: string | undefined): boolean {
  const asset = query.get(ASSET_PARAM);
  if (asset !== null) return (asset === SCRIPT || asset === STYLE || FONT.test(asset)) && assets().send(res, asset, ifNoneMatch);
  if (!assets().has(SCRIPT)) return false;
  const e = escapeHtml(endpoint);
  const html =
    '<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">' +
    `<title>GraphiQL ${e}</title><link rel="icon" href="data:,"><link rel="stylesheet" href="${e}?${ASSET_PARAM}=${STYLE}">` +
    `<script type="module" src="${e}?${ASSET_PARAM}=${SCRIPT}"></script></head>` +
    `<body><div id="graphiql" data-endpoint="${e}"></div></body></html>`;
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
