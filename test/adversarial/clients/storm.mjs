// A disconnect storm from its own process (so the proxy under test gets the requests as fast as
// a real burst would): `count` clients each send one request and close the socket `leaveMs`
// later. Bounded: every socket is closed by `leaveMs` + 5 s and the process then exits.
// Usage: node storm.mjs <base-url> <count> <leaveMs> <path-prefix> <authorization> <first-ip-index>
import { connect } from 'node:net';

const [base, countText, leaveText, prefix, authorization, firstText] = process.argv.slice(2);
const url = new URL(base);
const count = Number(countText);
const leaveMs = Number(leaveText);
const first = Number(firstText);
const ip = (i) => `127.${10 + Math.floor(i / 250)}.${(i % 250) + 1}.7`;

let sent = 0;
let closed = 0;
for (let i = 0; i < count; i++) {
  const socket = connect({ host: url.hostname, port: Number(url.port) }, () => {
    socket.write(`GET ${prefix}${i} HTTP/1.1\r\nhost: storm\r\nauthorization: ${authorization}\r\nx-forwarded-for: ${ip(first + i)}\r\n\r\n`);
    sent++;
    setTimeout(() => socket.destroy(), leaveMs);
  });
  socket.on('error', () => {});
  socket.on('close', () => {
    if (++closed === count) {
      process.stdout.write(JSON.stringify({ sent }) + '\n');
      process.exit(0);
    }
  });
}
setTimeout(() => process.exit(1), leaveMs + 5000).unref();
