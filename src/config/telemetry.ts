/**
 * `telemetry:` (SPEC §9): where traces are exported, read from the config and from the standard
 * OpenTelemetry environment variables, an environment variable winning over its config key.
 * No endpoint in either means no export (propagation still runs). gRPC is not offered: only
 * OTLP over HTTP, `http/protobuf` (the default) or `http/json`.
 */
import { z } from 'zod';
import { got, integer, oneOf, optionalSection, optionalText, text } from './fields.js';

export const TRACE_SAMPLERS = ['parentbased_always_on', 'parentbased_always_off', 'parentbased_traceidratio', 'always_on', 'always_off', 'traceidratio'] as const;
export type TraceSampler = (typeof TRACE_SAMPLERS)[number];
export const OTLP_PROTOCOLS = ['http/protobuf', 'http/json'] as const;
export type OtlpProtocol = (typeof OTLP_PROTOCOLS)[number];

export interface TelemetryConfig {
  serviceName: string;
  sampler: TraceSampler;
  /** The ratio of the `*traceidratio` samplers, 0..1 (default 1). */
  samplerArg: number | null;
  /**
   * Whether a client's sampled flag decides for the `parentbased_*` samplers (`respect`, the
   * OpenTelemetry default) or is ignored (`ignore`, for edge deployments: clients on the internet
   * must not choose to be traced, at the collector's cost, or not to be; the trace id is kept).
   */
  clientSampledFlag: 'respect' | 'ignore';
  otlp: {
    /** The collector's OTLP/HTTP base URL (`/v1/traces` is added), or the full traces URL; null: no export. */
    endpoint: string | null;
    protocol: OtlpProtocol;
    /** Sent with every export (a collector's API key): never logged. */
    headers: Record<string, string>;
    /** One export may take this long; then it is abandoned and its spans counted as dropped. */
    timeoutMs: number;
  };
  /** Ended spans waiting for export; past it spans are dropped and counted. */
  maxQueueSize: number;
}

/** What the exporter is built from, once the environment is applied. */
export interface ResolvedTelemetry {
  /** The full URL spans are POSTed to. */
  url: string;
  protocol: OtlpProtocol;
  headers: Record<string, string>;
  serviceName: string;
  sampler: TraceSampler;
  samplerArg: number;
  clientSampledFlag: 'respect' | 'ignore';
  resourceAttributes: Record<string, string>;
  timeoutMs: number;
  maxQueueSize: number;
}

const GRPC = 'gRPC is not offered: use http/protobuf (OTLP over HTTP, usually port 4318) or http/json';

const headerMap = z
  .record(z.string(), z.unknown(), { error: 'must be a map of header names to values, e.g. {x-api-key: "${COLLECTOR_KEY}"}' })
  .superRefine((map, ctx) => {
    for (const [name, value] of Object.entries(map))
      if (!/^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/.test(name) || typeof value !== 'string') ctx.addIssue({ code: 'custom', path: [name], message: 'must be a header name with a string value' });
  })
  .transform((map) => Object.fromEntries(Object.entries(map).map(([name, value]) => [name.toLowerCase(), value as string])));

export const telemetrySchema = optionalSection({
  serviceName: text(undefined, { fallback: 'outrigger' }),
  sampler: oneOf(TRACE_SAMPLERS).default('parentbased_always_on'),
  samplerArg: z
    .number({ error: (iss) => `must be a ratio from 0 to 1, e.g. 0.1 for one trace in ten ${got(iss.input)}` })
    .min(0)
    .max(1)
    .nullable()
    .default(null),
  clientSampledFlag: oneOf(['respect', 'ignore']).default('respect'),
  otlp: optionalSection({
    endpoint: optionalText(otlpUrl),
    protocol: z.enum(OTLP_PROTOCOLS, { error: (iss) => (iss.input === 'grpc' ? GRPC : `must be one of ${OTLP_PROTOCOLS.join(', ')} ${got(iss.input)}`) }).default('http/protobuf'),
    headers: headerMap.default({}),
    timeoutMs: integer(100, 120_000).default(10_000),
  }),
  maxQueueSize: integer(1, 1_000_000).default(2048),
});

function otlpUrl(v: string): string | null {
  try {
    const u = new URL(v);
    if (u.protocol === 'http:' || u.protocol === 'https:') return null;
  } catch {
    // below
  }
  return `must be the collector's OTLP/HTTP URL, like http://otel-collector:4318 (got ${JSON.stringify(v)})`;
}

/**
 * The export settings with the environment applied (each OTEL_* variable wins over its key), or
 * null when no endpoint is set anywhere; `problems` names each variable that cannot be used.
 */
export function resolveTelemetry(t: TelemetryConfig, env: NodeJS.ProcessEnv): { settings: ResolvedTelemetry | null; problems: string[] } {
  const problems: string[] = [];
  const value = (name: string) => {
    const v = env[name]?.trim();
    return v ? v : undefined;
  };
  const protocolName = value('OTEL_EXPORTER_OTLP_TRACES_PROTOCOL') ? 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL' : 'OTEL_EXPORTER_OTLP_PROTOCOL';
  let protocol: OtlpProtocol = t.otlp.protocol;
  const envProtocol = value(protocolName);
  if (envProtocol !== undefined) {
    if (envProtocol === 'grpc') problems.push(`${protocolName}: ${GRPC}`);
    else if (!(OTLP_PROTOCOLS as readonly string[]).includes(envProtocol)) problems.push(`${protocolName}: must be http/protobuf or http/json (got ${JSON.stringify(envProtocol)})`);
    else protocol = envProtocol as OtlpProtocol;
  }
  const sampler = value('OTEL_TRACES_SAMPLER') ?? t.sampler;
  if (!(TRACE_SAMPLERS as readonly string[]).includes(sampler)) problems.push(`OTEL_TRACES_SAMPLER: must be one of ${TRACE_SAMPLERS.join(', ')} (got ${JSON.stringify(sampler)})`);
  let samplerArg = t.samplerArg ?? 1;
  const envArg = value('OTEL_TRACES_SAMPLER_ARG');
  if (envArg !== undefined) {
    const n = Number(envArg);
    if (!(n >= 0 && n <= 1)) problems.push(`OTEL_TRACES_SAMPLER_ARG: must be a ratio from 0 to 1 (got ${JSON.stringify(envArg)})`);
    else samplerArg = n;
  }
  const headers = {
    ...t.otlp.headers,
    ...parsePairs(value('OTEL_EXPORTER_OTLP_HEADERS'), 'OTEL_EXPORTER_OTLP_HEADERS', problems, true),
    ...parsePairs(value('OTEL_EXPORTER_OTLP_TRACES_HEADERS'), 'OTEL_EXPORTER_OTLP_TRACES_HEADERS', problems, true),
  };
  const resourceAttributes = parsePairs(value('OTEL_RESOURCE_ATTRIBUTES'), 'OTEL_RESOURCE_ATTRIBUTES', problems, false);
  // OTEL_SERVICE_NAME wins over a service.name in OTEL_RESOURCE_ATTRIBUTES, which wins over the config key.
  const serviceName = value('OTEL_SERVICE_NAME') ?? resourceAttributes['service.name'] ?? t.serviceName;

  let url: string | null = null;
  const tracesEndpoint = value('OTEL_EXPORTER_OTLP_TRACES_ENDPOINT');
  const baseEndpoint = value('OTEL_EXPORTER_OTLP_ENDPOINT');
  if (tracesEndpoint !== undefined) url = checkedUrl(tracesEndpoint, 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', problems);
  else if (baseEndpoint !== undefined) url = withTracesPath(checkedUrl(baseEndpoint, 'OTEL_EXPORTER_OTLP_ENDPOINT', problems));
  else if (t.otlp.endpoint) url = withTracesPath(t.otlp.endpoint);
  if (value('OTEL_SDK_DISABLED') === 'true' || value('OTEL_TRACES_EXPORTER') === 'none') url = null;
  if (url === null) return { settings: null, problems };
  return {
    settings: {
      url,
      protocol,
      headers,
      serviceName,
      sampler: sampler as TraceSampler,
      samplerArg,
      clientSampledFlag: t.clientSampledFlag,
      resourceAttributes,
      timeoutMs: t.otlp.timeoutMs,
      maxQueueSize: t.maxQueueSize,
    },
    problems,
  };
}

function checkedUrl(v: string, name: string, problems: string[]): string | null {
  const problem = otlpUrl(v);
  if (problem) problems.push(`${name}: ${problem}`);
  return problem ? null : v;
}

/** A base endpoint gets the traces path, as OTEL_EXPORTER_OTLP_ENDPOINT does; a URL already ending in it is kept. */
function withTracesPath(url: string | null): string | null {
  if (url === null) return null;
  if (/\/v1\/traces\/?$/.test(url)) return url;
  return `${url.replace(/\/+$/, '')}/v1/traces`;
}

/** `k1=v1,k2=v2` with percent-encoded values (W3C baggage octets), as the OTEL_* variables write maps. */
function parsePairs(text: string | undefined, name: string, problems: string[], lowerKeys: boolean): Record<string, string> {
  const out: Record<string, string> = {};
  if (!text) return out;
  for (const item of text.split(',')) {
    if (!item.trim()) continue;
    const eq = item.indexOf('=');
    if (eq <= 0) {
      // Never the value itself: it may be a credential.
      problems.push(`${name}: each item must be key=value, separated by commas`);
      continue;
    }
    const key = item.slice(0, eq).trim();
    let v = item.slice(eq + 1).trim();
    try {
      v = decodeURIComponent(v);
    } catch {
      // kept as written
    }
    out[lowerKeys ? key.toLowerCase() : key] = v;
  }
  return out;
}
