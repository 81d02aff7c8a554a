/**
 * An OTLP/HTTP traces receiver for tests: a node:http server on loopback that records every
 * span it is sent, in JSON (`http/json`) or protobuf (`http/protobuf`, decoded with the OTLP
 * transformer's own ProtobufReader, the package the exporter encodes with). It can also refuse
 * (answer 503) or hang (accept and never answer), as a collector in trouble does.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ProtobufReader } from '@opentelemetry/otlp-transformer/build/src/common/protobuf/protobuf-reader.js';

export type AttributeValue = string | number | boolean | null | AttributeValue[];

export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  /** '' for a root span. */
  parentSpanId: string;
  name: string;
  /** 1 internal, 2 server, 3 client (OTLP's SpanKind). */
  kind: number;
  attributes: Record<string, AttributeValue>;
  /** 0 unset, 1 ok, 2 error. */
  statusCode: number;
  resource: Record<string, AttributeValue>;
  /** Which encoding it arrived in. */
  encoding: 'json' | 'protobuf';
}

export interface OtlpReceiver {
  url: string;
  spans: ReceivedSpan[];
  /** Export requests received (whatever was answered). */
  requests: number;
  /** `accept` (200), `refuse` (503), `hang` (never answers). */
  mode: 'accept' | 'refuse' | 'hang';
  close(): Promise<void>;
}

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const hanging = new Set<ServerResponse>();
  const receiver: OtlpReceiver = {
    url: '',
    spans: [],
    requests: 0,
    mode: 'accept',
    close: async () => {
      for (const res of hanging) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      receiver.requests++;
      if (receiver.mode === 'hang') {
        hanging.add(res);
        return;
      }
      if (receiver.mode === 'refuse') {
        res.writeHead(503).end();
        return;
      }
      const body = Buffer.concat(chunks);
      const type = String(req.headers['content-type'] ?? '');
      try {
        receiver.spans.push(...(type.includes('json') ? fromJson(JSON.parse(body.toString('utf8'))) : fromProtobuf(body)));
      } catch (error) {
        res.writeHead(400).end(String(error));
        return;
      }
      if (type.includes('json')) res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      else res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  receiver.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return receiver;
}

// ---- JSON (OTLP/JSON: ids as hex strings, enums as numbers) ----

type JsonValue = { stringValue?: string; boolValue?: boolean; intValue?: string | number; doubleValue?: number; arrayValue?: { values?: JsonValue[] } };

function jsonValue(v: JsonValue | undefined): AttributeValue {
  if (!v) return null;
  if (v.stringValue !== undefined) return v.stringValue;
  if (v.boolValue !== undefined) return v.boolValue;
  if (v.intValue !== undefined) return Number(v.intValue);
  if (v.doubleValue !== undefined) return v.doubleValue;
  if (v.arrayValue) return (v.arrayValue.values ?? []).map(jsonValue);
  return null;
}

function jsonAttributes(list: Array<{ key: string; value: JsonValue }> | undefined): Record<string, AttributeValue> {
  return Object.fromEntries((list ?? []).map((kv) => [kv.key, jsonValue(kv.value)]));
}

function fromJson(body: any): ReceivedSpan[] {
  const out: ReceivedSpan[] = [];
  for (const rs of body.resourceSpans ?? []) {
    const resource = jsonAttributes(rs.resource?.attributes);
    for (const ss of rs.scopeSpans ?? [])
      for (const s of ss.spans ?? [])
        out.push({
          traceId: s.traceId,
          spanId: s.spanId,
          parentSpanId: s.parentSpanId ?? '',
          name: s.name,
          kind: s.kind,
          attributes: jsonAttributes(s.attributes),
          statusCode: s.status?.code ?? 0,
          resource,
          encoding: 'json',
        });
  }
  return out;
}

// ---- protobuf (opentelemetry/proto/collector/trace/v1/trace_service.proto) ----

const hex = (bytes: Uint8Array) => Buffer.from(bytes).toString('hex');

function fields(bytes: Uint8Array, each: (field: number, wire: number, r: ProtobufReader) => void): void {
  const r = new ProtobufReader(bytes);
  while (!r.isAtEnd()) {
    const { fieldNumber, wireType } = r.readTag();
    const before = r.pos;
    each(fieldNumber, wireType, r);
    if (r.pos === before) r.skip(wireType);
  }
}

function anyValue(bytes: Uint8Array): AttributeValue {
  let value: AttributeValue = null;
  fields(bytes, (f, wire, r) => {
    if (f === 1) value = r.readString();
    else if (f === 2) value = r.readVarint() !== 0;
    else if (f === 3) value = r.readVarint();
    else if (f === 4 && wire === 1) {
      value = Buffer.from(bytes.buffer, bytes.byteOffset + r.pos, 8).readDoubleLE(0);
      r.skip(1);
    } else if (f === 5) {
      const list: AttributeValue[] = [];
      fields(r.readBytes(), (g, _w, rr) => {
        if (g === 1) list.push(anyValue(rr.readBytes()));
      });
      value = list;
    }
  });
  return value;
}

function keyValues(into: Record<string, AttributeValue>, bytes: Uint8Array): void {
  let key = '';
  let value: AttributeValue = null;
  fields(bytes, (f, _w, r) => {
    if (f === 1) key = r.readString();
    else if (f === 2) value = anyValue(r.readBytes());
  });
  into[key] = value;
}

function fromProtobuf(body: Uint8Array): ReceivedSpan[] {
  const out: ReceivedSpan[] = [];
  fields(body, (f, _w, r) => {
    if (f !== 1) return;
    const resource: Record<string, AttributeValue> = {};
    const scopes: Uint8Array[] = [];
    fields(r.readBytes(), (g, _w2, rr) => {
      if (g === 1)
        fields(rr.readBytes(), (h, _w3, r3) => {
          if (h === 1) keyValues(resource, r3.readBytes());
        });
      else if (g === 2) scopes.push(rr.readBytes());
    });
    for (const scope of scopes)
      fields(scope, (g, _w2, rr) => {
        if (g !== 2) return;
        const span: ReceivedSpan = { traceId: '', spanId: '', parentSpanId: '', name: '', kind: 0, attributes: {}, statusCode: 0, resource, encoding: 'protobuf' };
        fields(rr.readBytes(), (h, _w3, r3) => {
          if (h === 1) span.traceId = hex(r3.readBytes());
          else if (h === 2) span.spanId = hex(r3.readBytes());
          else if (h === 4) span.parentSpanId = hex(r3.readBytes());
          else if (h === 5) span.name = r3.readString();
          else if (h === 6) span.kind = r3.readVarint();
          else if (h === 9) keyValues(span.attributes, r3.readBytes());
          else if (h === 15)
            fields(r3.readBytes(), (k, _w4, r4) => {
              if (k === 3) span.statusCode = r4.readVarint();
            });
        });
        out.push(span);
      });
  });
  return out;
}
