#!/usr/bin/env node
/**
 * The minimal webhook worker: the pipeline phase's baseline, as the minimal undici forwarder is
 * the pass-through's. It does for each event only the work that SPEC §7 makes every delivery
 * cost, on the same libraries as Outrigger (ioredis, undici):
 *
 * - read the event from the stream (version 3 and 4 entries, as the proxy writes them);
 * - build the default payload, the captured request and response embedded;
 * - sign it (Standard Webhooks: HMAC-SHA256 over `id.timestamp.body`);
 * - POST it over a keep-alive pool, up to 64 deliveries in flight;
 * - store a log entry holding the payload, with a TTL (one SET per delivery, written with the
 *   other deliveries of the same event-loop turn in one MULTI);
 * - acknowledge and delete a stream entry once every event in it has been sent.
 *
 * None of the safety a real worker owes: no retries, no delivery markers (a crash redelivers a
 * whole entry), no reclaiming, no SSRF guard, no timeouts, no body limits, no metrics, no log
 * indexes, no auto-disable, no transform, no canonical-JSON check (bodies are spliced as
 * captured, so the payload may differ from the real one). So what it costs per event is a floor:
 * no worker that keeps those guarantees can cost less on these libraries, and the bench reads
 * Outrigger's worker against it.
 *
 *   node bench/servers/minimal-worker.mjs --redis URL --stream KEY --target URL
 */
import { createHmac, createSecretKey } from 'node:crypto';
import { parseArgs } from 'node:util';
import Redis from 'ioredis';
import { Pool } from 'undici';

const { values: opts } = parseArgs({ options: { redis: { type: 'string' }, stream: { type: 'string' }, target: { type: 'string' } } });
if (!opts.redis || !opts.stream || !opts.target) {
  process.stderr.write('usage: node bench/servers/minimal-worker.mjs --redis URL --stream KEY --target URL\n');
  process.exit(2);
}

const GROUP = 'minimal-worker';
const IN_FLIGHT = 64;
const LOG_TTL_MS = 86_400_000;
const target = new URL(opts.target);
const pool = new Pool(target.origin, { connections: IN_FLIGHT, keepAliveTimeout: 60_000 });
const redis = new Redis(opts.redis);
const signingKey = createSecretKey(Buffer.from('minimal-worker-signing-key-32-bytes!'));
const logPrefix = `${opts.stream}:minimal-log:`;
process.on('SIGTERM', () => process.exit(0));

// Writes of one event-loop turn go to Redis in one MULTI.
let writes = [];
let writeScheduled = false;
function write(command) {
  writes.push(command);
  if (writeScheduled) return;
  writeScheduled = true;
  setImmediate(() => {
    writeScheduled = false;
    const batch = writes;
    writes = [];
    redis
      .multi(batch)
      .exec()
      .catch((error) => process.stderr.write(`minimal-worker: ${error.message}\n`));
  });
}

function post(body, headers) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    let status = 0;
    pool.dispatch(
      { path: target.pathname, method: 'POST', headers, body },
      {
        onConnect() {},
        onError: reject,
        onHeaders(code) {
          status = code;
          return true;
        },
        onData(chunk) {
          chunks.push(chunk);
          return true;
        },
        onComplete() {
          resolve({ status, body: Buffer.concat(chunks).toString('utf8') });
        },
      },
    );
  });
}

/** A version 3 value: the meta JSON, a newline, then the kept request and response body bytes. */
function decode(value) {
  const end = value.indexOf(10);
  const meta = JSON.parse(value.toString('utf8', 0, end));
  let offset = end + 1;
  const body = (ref) => {
    if (!ref) return 'null';
    if ('b' in ref) return JSON.stringify(ref.b);
    const text = value.toString('utf8', offset, offset + (ref.k ?? 0));
    offset += ref.k ?? 0;
    return ref.ct?.includes('json') ? text : JSON.stringify(text);
  };
  return { meta, requestBody: body(meta.qb), responseBody: body(meta.rb) };
}

async function deliver(value, entry) {
  const { meta, requestBody, responseBody } = decode(value);
  const request = `{"method":${JSON.stringify(meta.m)},"path":${JSON.stringify(meta.p)},"query":${JSON.stringify(meta.q)},"headers":${JSON.stringify(meta.qh)},"body":${requestBody}}`;
  const head = `{"id":"${meta.id}","timestamp":"${new Date(meta.t).toISOString()}","service":{"id":${JSON.stringify(meta.s)}},"webhook":{"id":"minimal","name":"minimal"},"request":`;
  const tail = `,"response":{"statusCode":${meta.sc},"headers":${JSON.stringify(meta.rh)},"body":${responseBody}}}`;
  const payload = `${head}${request}${tail}`;
  const messageId = `msg_${meta.id}`;
  const seconds = String(Math.floor(Date.now() / 1000));
  const signature = createHmac('sha256', signingKey).update(`${messageId}.${seconds}.`).update(payload).digest('base64');
  const headers = { 'content-type': 'application/json', 'user-agent': 'minimal-worker', 'webhook-id': messageId, 'webhook-timestamp': seconds, 'webhook-signature': `v1,${signature}` };
  const started = Date.now();
  let status = 'success';
  let response = { status: 0, body: '' };
  try {
    response = await post(payload, headers);
    if (response.status < 200 || response.status > 299) status = 'failed';
  } catch {
    status = 'failed';
  }
  const log =
    `{"_id":"${meta.id}:minimal","eventId":"${meta.id}","status":"${status}","timestamp":{"$date":${started}},"durationMs":${Date.now() - started},` +
    `"detail":{"incomingRequest":${request},"outgoingRequest":{"method":"POST","url":${JSON.stringify(opts.target)},"headers":${JSON.stringify(headers)},"payload":${head}0${tail}},` +
    `"response":{"statusCode":${response.status},"body":${JSON.stringify(response.body)}}}}`;
  write(['set', `${logPrefix}${meta.id}`, log, 'PX', String(LOG_TTL_MS)]);
  if (--entry.left === 0) {
    write(['xack', opts.stream, GROUP, entry.id]);
    write(['xdel', opts.stream, entry.id]);
  }
}

/** The event values of one entry's fields: a version 4 head `{"v":4,...}` is skipped. */
function eventValues(fields) {
  const values = [];
  for (let i = 1; i < fields.length; i += 2) values.push(fields[i]);
  const first = values[0];
  if (values.length > 1 && first[0] === 0x7b && first.indexOf('"v":4') === 1) values.shift();
  return values;
}

try {
  await redis.xgroup('CREATE', opts.stream, GROUP, '0', 'MKSTREAM');
} catch (error) {
  if (!String(error.message).includes('BUSYGROUP')) throw error;
}

let waiting = []; // [value, entry] not started yet, oldest first from `next`
let next = 0;
let inFlight = 0;
let wake = null;
function startMore() {
  while (inFlight < IN_FLIGHT && next < waiting.length) {
    const [value, entry] = waiting[next++];
    inFlight++;
    deliver(value, entry)
      .catch((error) => process.stderr.write(`minimal-worker: ${error.message}\n`))
      .finally(() => {
        inFlight--;
        startMore();
        if (wake && waiting.length - next < IN_FLIGHT) wake();
      });
  }
}

for (;;) {
  if (waiting.length - next >= IN_FLIGHT) {
    await new Promise((resolve) => (wake = resolve));
    wake = null;
    continue;
  }
  const reply = await redis.xreadgroupBuffer('GROUP', GROUP, 'minimal', 'COUNT', 1, 'BLOCK', 100, 'STREAMS', opts.stream, '>');
  if (!reply) continue;
  for (const [idBytes, fields] of reply[0][1]) {
    const values = eventValues(fields);
    const entry = { id: idBytes.toString(), left: values.length };
    if (next > 1024) {
      waiting = waiting.slice(next); // let go of the values already started
      next = 0;
    }
    for (const value of values) waiting.push([value, entry]);
  }
  startMore();
}
