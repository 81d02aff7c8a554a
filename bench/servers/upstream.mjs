/**
 * The pass-through upstream: every GET answers the same precomputed 1,024-byte JSON body with
 * Content-Length (as in notes §B), except `GET /roles/<id>`, which plays RESTHeart's /roles for
 * `users.source: upstream`: user `<id>` with password `<id>-password` has role `user`.
 * keepAliveTimeout 65 s, so the upstream never closes a socket a proxy is about to reuse.
 */
import { createServer } from 'node:http';
import { countingServer } from './ipc.mjs';

const BODY = oneKibJson();
const ROLES = Buffer.from(JSON.stringify({ authenticated: true, roles: ['user'] }));
const HEADERS = { 'content-type': 'application/json', 'content-length': String(BODY.length) };

const server = createServer((req, res) => {
  const url = req.url ?? '/';
  if (url.startsWith('/roles/')) return roles(req, res, decodeURIComponent(url.slice(7)));
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    req.resume();
    req.once('end', () => {
      res.writeHead(200, HEADERS);
      res.end(BODY);
    });
    return;
  }
  res.writeHead(200, HEADERS);
  res.end(BODY);
});
server.keepAliveTimeout = 65_000;
server.headersTimeout = 66_000;

function roles(req, res, id) {
  const expected = `Basic ${Buffer.from(`${id}:${id}-password`).toString('base64')}`;
  if (req.headers.authorization !== expected) {
    res.writeHead(401, { 'content-type': 'application/json', 'www-authenticate': 'Basic realm="RESTHeart Realm"' });
    res.end('{"http status code":401}');
    return;
  }
  res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(ROLES.length) });
  res.end(ROLES);
}

function oneKibJson() {
  const items = Array.from({ length: 8 }, (_, i) => ({ _id: `item-${i}`, name: `Item ${i}`, price: 10 + i, tags: ['a', 'b'] }));
  const doc = { items, pad: '' };
  const base = Buffer.byteLength(JSON.stringify(doc));
  doc.pad = 'x'.repeat(1024 - base);
  const body = Buffer.from(JSON.stringify(doc));
  if (body.length !== 1024) throw new Error(`upstream body is ${body.length} bytes, not 1024`);
  return body;
}

countingServer(server);
