/**
 * Runs the stand-in with the demo dataset, as the quickstart's backend.
 *
 *   --port N | PORT=N            default 8081 (the upstream.url in the example config)
 *   --host H | HOST=H            default 127.0.0.1
 *   STANDIN_JWT_SECRET=...       accept Bearer JWTs signed with it (issuer restheart.org, as
 *                                RESTHeart's default and Outrigger's upstream.identity.jwt default)
 */
import { demoData, demoUsers } from './demo-data.js';
import { startStandinBackend } from './index.js';

function argument(name: string): string | undefined {
  const args = process.argv.slice(2);
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] as string;
    if (arg === `--${name}`) return args[i + 1];
    if (arg.startsWith(`--${name}=`)) return arg.slice(name.length + 3);
  }
  return undefined;
}

const rawPort = argument('port') ?? process.env.PORT ?? '8081';
const port = Number(rawPort);
if (!Number.isInteger(port) || port < 0 || port > 65535) {
  console.error(`standin backend: --port/PORT must be a port number 0-65535, got '${rawPort}'`);
  process.exit(2);
}
const secret = process.env.STANDIN_JWT_SECRET;

const backend = await startStandinBackend({
  port,
  host: argument('host') ?? process.env.HOST ?? '127.0.0.1',
  data: demoData,
  users: demoUsers,
  ...(secret ? { jwt: { secret, issuer: 'restheart.org' } } : {}),
});
console.log(
  `standin backend (RESTHeart-compatible) listening on ${backend.url} — try ${backend.url}/restheart/orders; ` +
    `users ${demoUsers.map((u) => u.id).join(', ')} (password <id>-password); JWT ${secret ? 'on' : 'off'}`,
);

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    backend.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  });
}
