/**
 * `npm run demo`: the stand-in RESTHeart backend, Outrigger in front of it with an embedded
 * redis-server, and a few curl commands to try. Ctrl-C stops everything.
 */
import { randomBytes } from 'node:crypto';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startOutrigger } from '../../src/app.js';
import { validateConfig } from '../../src/config/validate.js';
import { stopOnSignals } from '../../src/cli/commands/start.js';
import { demoData, demoUsers } from '../standin-backend/demo-data.js';
import { startStandinBackend } from '../standin-backend/index.js';

const port = Number(process.env.OUTRIGGER_DEMO_PORT ?? 8080);
const backendPort = Number(process.env.OUTRIGGER_DEMO_BACKEND_PORT ?? 8081);
// Resolved from the source tree, so it is found whether this runs from dist/ or not.
const setupFile = resolve(dirname(fileURLToPath(import.meta.url)), '../../../examples/demo/setup.yaml');
const jwtSecret = randomBytes(32).toString('base64url');

const backend = await startStandinBackend({ port: backendPort, data: demoData, users: demoUsers, jwt: { secret: jwtSecret, issuer: 'restheart.org' } });
const { config, problems } = validateConfig({
  service: { id: 'demo', publicUrl: `http://localhost:${port}` },
  listen: { host: '127.0.0.1', port },
  upstream: { url: backend.url, identity: { mode: 'jwt', jwt: { secret: jwtSecret } } },
  redis: { url: 'embedded' },
  users: { source: 'upstream' },
  acl: { mode: 'enforce', bootstrap: setupFile },
  webhooks: { allowPrivateTargets: ['127.0.0.0/8'] },
  log: { level: process.env.OUTRIGGER_LOG_LEVEL ?? 'info' },
});
if (problems.length) throw new Error(problems.join('\n'));
const outrigger = await startOutrigger(config, { embeddedRedisDir: join(process.cwd(), '.outrigger', 'demo-redis') });

const u = outrigger.url;
process.stdout.write(`
Outrigger demo is running.
  Outrigger (call this):      ${u}
  stand-in RESTHeart backend: ${backend.url}   (users alice, bob, carol, admin; password <id>-password)

Try:
  curl -s -u alice:alice-password ${u}/restheart/orders              # only alice's orders (readFilter)
  curl -s -u carol:carol-password ${u}/restheart/orders              # an auditor: every order, without items
  curl -s ${u}/restheart/orders                                      # 401: sign in first
  curl -s -u alice:alice-password -X POST ${u}/keys -H 'content-type: application/json' -d '{"name":"laptop","roles":["reader"]}'
  curl -s -H "Authorization: Bearer <the key printed above>" ${u}/restheart/orders
  curl -s -u admin:admin-password ${u}/_admin/acl                    # the permissions applied from examples/demo/setup.yaml
  curl -s ${u}/_health/ready ; curl -s ${u}/_metrics | head

Ctrl-C stops the demo.
`);

stopOnSignals(async () => {
  await outrigger.stop();
  await backend.close();
});
